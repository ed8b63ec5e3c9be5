//! Helpers shared by the integration-test binaries (each binary uses some of them).
#![allow(dead_code)]

pub mod corpus;
