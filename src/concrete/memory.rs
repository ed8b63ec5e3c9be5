//! Concrete memory: objects (globals, locals of call frames, heap blocks, string literals) at
//! distinct integer addresses, each an array of bytes.
//!
//! Pointers are plain integers (the object's base address plus the byte offset), so pointers
//! stored in memory, cast to integers and back, or passed as `void *` thread arguments keep
//! their meaning without any special representation. Addresses are never reused: an access
//! through a pointer to a freed block or to a local of a returned call finds a dead object and
//! stops the execution (use after free is undefined behaviour). Objects are separated by gaps,
//! so running off the end of one never reaches another.
//!
//! Objects are reference-counted and copied on write, so a [`Memory`] clones cheaply (the
//! explorer clones the machine to look at the next step of a thread without taking it).

use super::Stop;
use crate::ir::{EdgeId, FuncId, GlobalId, LocalId, StrId};
use std::collections::BTreeMap;
use std::rc::Rc;

/// Index of an object in [`Memory`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjId(pub u32);

/// What an object is in the program: the concrete counterpart of a static
/// [`crate::backend::Base`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Origin {
    /// A global variable (one instance per thread if `_Thread_local`).
    Global(GlobalId),
    /// A local variable of a call of `func`.
    Local {
        /// The function.
        func: FuncId,
        /// The variable.
        local: LocalId,
    },
    /// A heap block allocated by the call statement `edge` of `func`.
    Heap {
        /// Function containing the allocation call.
        func: FuncId,
        /// The allocation call.
        edge: EdgeId,
    },
    /// A string literal.
    Str(StrId),
    /// An object of the C library the program only points to (`stdout`'s `FILE`).
    Opaque,
}

/// One memory object.
#[derive(Clone, Debug)]
pub struct Object {
    /// First address.
    pub base: u64,
    /// Size in bytes.
    pub size: u64,
    /// Contents; bytes past the end of the vector are zero (large objects are filled lazily).
    bytes: Vec<u8>,
    /// What the object is.
    pub origin: Origin,
    /// Still allocated (false after `free` or the return of its frame).
    pub live: bool,
    /// Writes are undefined behaviour (string literals).
    pub readonly: bool,
    /// Contents unknown to the program model: reading or writing stops the execution.
    pub opaque: bool,
}

/// Where objects start: addresses below are null and function addresses.
pub const FIRST_OBJECT: u64 = 0x0010_0000;
/// Function `f` lives at `FUNC_BASE + 16 * f`.
pub const FUNC_BASE: u64 = 0x1000;
/// How far outside its object pointer arithmetic may go (the `container_of` idiom steps back
/// from a member; an access through such a pointer still stops).
pub const SLACK: u64 = 2048;
/// Bytes left unused after each object: twice [`SLACK`], so a pointer out of bounds of one
/// object never points into another.
const GAP: u64 = 2 * SLACK;
/// Largest object the model allocates (larger allocations fail, larger declared objects stop).
pub const MAX_OBJECT: u64 = 1 << 26;

/// The memory of one execution.
#[derive(Clone, Debug)]
pub struct Memory {
    objects: Vec<Rc<Object>>,
    by_base: BTreeMap<u64, ObjId>,
    next: u64,
    /// One past the highest usable address (the pointer width of the data model).
    limit: u64,
}

impl Memory {
    /// An empty memory for pointers of `pointer_bytes` bytes.
    pub fn new(pointer_bytes: u64) -> Memory {
        let limit = if pointer_bytes >= 8 {
            1 << 47
        } else {
            0xF000_0000
        };
        Memory {
            objects: Vec::new(),
            by_base: BTreeMap::new(),
            next: FIRST_OBJECT,
            limit,
        }
    }

    /// Allocates a zero-filled object of `size` bytes aligned to `align`.
    ///
    /// Errors: the object is too large or the address space is exhausted.
    pub fn alloc(&mut self, size: u64, align: u64, origin: Origin) -> Result<ObjId, Stop> {
        if size > MAX_OBJECT {
            return Err(Stop::new("object too large for the concrete model"));
        }
        let align = align.clamp(16, 4096);
        let base = self.next.div_ceil(align) * align;
        let end = base + size + GAP;
        if end >= self.limit {
            return Err(Stop::new("address space exhausted"));
        }
        self.next = end;
        let id = ObjId(self.objects.len() as u32);
        self.objects.push(Rc::new(Object {
            base,
            size,
            bytes: Vec::new(),
            origin,
            live: true,
            readonly: false,
            opaque: false,
        }));
        self.by_base.insert(base, id);
        Ok(id)
    }

    /// The object behind an id.
    pub fn object(&self, id: ObjId) -> &Object {
        &self.objects[id.0 as usize]
    }

    fn object_mut(&mut self, id: ObjId) -> &mut Object {
        Rc::make_mut(&mut self.objects[id.0 as usize])
    }

    /// Marks an object read-only (string literals) or opaque.
    pub fn set_flags(&mut self, id: ObjId, readonly: bool, opaque: bool) {
        let o = self.object_mut(id);
        o.readonly = readonly;
        o.opaque = opaque;
    }

    /// Ends the lifetime of an object.
    pub fn kill(&mut self, id: ObjId) {
        self.object_mut(id).live = false;
    }

    /// The object whose bytes (or one-past-the-end address) include `addr`, with the offset.
    pub fn find(&self, addr: u64) -> Option<(ObjId, u64)> {
        let (&base, &id) = self.by_base.range(..=addr).next_back()?;
        let off = addr - base;
        (off <= self.object(id).size).then_some((id, off))
    }

    /// The object `addr` points into or near (within [`SLACK`] bytes outside it), with the
    /// signed offset from its base.
    pub fn find_near(&self, addr: u64) -> Option<(ObjId, i128)> {
        if let Some((&base, &id)) = self.by_base.range(..=addr).next_back()
            && addr - base <= self.object(id).size + SLACK
        {
            return Some((id, (addr - base) as i128));
        }
        let (&base, &id) = self.by_base.range(addr..).next()?;
        (base - addr <= SLACK).then_some((id, addr as i128 - base as i128))
    }

    /// The live object holding `len` bytes at `addr`, with the offset.
    ///
    /// Errors: null, dangling or out-of-bounds accesses, opaque objects.
    pub fn locate(&self, addr: u64, len: u64) -> Result<(ObjId, u64), Stop> {
        let Some((id, off)) = self.find(addr) else {
            return Err(Stop::new("access through an invalid pointer"));
        };
        let o = self.object(id);
        if !o.live {
            return Err(Stop::new("access to a dead object"));
        }
        if o.opaque {
            return Err(Stop::new("access to an object of the C library"));
        }
        if off.checked_add(len).is_none_or(|end| end > o.size) {
            return Err(Stop::new("out-of-bounds access"));
        }
        Ok((id, off))
    }

    /// Reads `len` bytes of object `id` at `off` (in bounds: see [`Memory::locate`]).
    pub fn read_at(&self, id: ObjId, off: u64, len: u64) -> Vec<u8> {
        let o = self.object(id);
        let mut out = vec![0u8; len as usize];
        let have = o.bytes.len() as u64;
        if off < have {
            let n = (have - off).min(len) as usize;
            out[..n].copy_from_slice(&o.bytes[off as usize..off as usize + n]);
        }
        out
    }

    /// Writes bytes into object `id` at `off` (in bounds: see [`Memory::locate`]).
    ///
    /// Errors: the object is read-only.
    pub fn write_at(&mut self, id: ObjId, off: u64, data: &[u8]) -> Result<(), Stop> {
        if self.object(id).readonly {
            return Err(Stop::new("write to a read-only object"));
        }
        let end = off as usize + data.len();
        let o = self.object_mut(id);
        if o.bytes.len() < end {
            if data.iter().all(|b| *b == 0) && o.bytes.len() <= off as usize {
                return Ok(()); // zeros past the filled part are already there
            }
            o.bytes.resize(end, 0);
        }
        o.bytes[off as usize..end].copy_from_slice(data);
        Ok(())
    }

    /// Number of objects allocated so far.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether no object was allocated.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_disjoint_and_bounds_checked() {
        let mut m = Memory::new(4);
        let a = m
            .alloc(8, 4, Origin::Opaque)
            .unwrap_or_else(|e| panic!("{e:?}"));
        let b = m
            .alloc(4, 4, Origin::Opaque)
            .unwrap_or_else(|e| panic!("{e:?}"));
        let (ba, bb) = (m.object(a).base, m.object(b).base);
        assert!(ba + 8 < bb);
        assert_eq!(m.locate(ba + 4, 4).ok(), Some((a, 4)));
        assert!(m.locate(ba + 6, 4).is_err());
        assert!(m.locate(0, 1).is_err());
        assert!(m.write_at(a, 2, &[1, 2]).is_ok());
        assert_eq!(m.read_at(a, 0, 5), vec![0, 0, 1, 2, 0]);
        m.kill(a);
        assert!(m.locate(ba, 1).is_err());
    }

    #[test]
    fn clones_copy_on_write() {
        let mut m = Memory::new(8);
        let a = m
            .alloc(4, 4, Origin::Opaque)
            .unwrap_or_else(|e| panic!("{e:?}"));
        let mut c = m.clone();
        assert!(c.write_at(a, 0, &[7]).is_ok());
        assert_eq!(m.read_at(a, 0, 1), vec![0]);
        assert_eq!(c.read_at(a, 0, 1), vec![7]);
    }
}
