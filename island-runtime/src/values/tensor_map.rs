//! Tensor maps: the 128-byte descriptors a TMA copy (`cp.async.bulk.tensor`, sm_90) reads to
//! find a box of a tensor in global memory and lay it out in shared memory. A map is encoded on
//! the host for one buffer (`cuTensorMapEncodeTiled`) and passed to the kernel in global memory.
//!
//! Here a map always describes a two-dimensional tensor of bytes ([`TmaTile`]): rows of
//! `row_bytes`, packed. A box of `box_rows × box_bytes` is what one copy moves; its rows land
//! `box_bytes` apart in shared memory, swizzled by `swizzle` bytes as a `wgmma` descriptor
//! reads them. Bytes keep any element type's bits, so one kind of map serves every type.
//!
//! A proof input `map: tensor_map(src, TILE)` is one map per cube over that cube's slice of
//! `src`: encoded on CUDA, 128 zero bytes on every other runtime (none of them runs a TMA copy,
//! and an emulation reads the tensor, never the map).

use cubecl::prelude::Client;
use cubecl::server::Handle;
use serde::Serialize;

/// Bytes of one encoded map.
pub const MAP_BYTES: usize = 128;
/// `u32` words of one encoded map (a proof's map input holds this many per cube).
pub const MAP_WORDS: u32 = (MAP_BYTES / 4) as u32;

/// A two-dimensional byte tensor and the box one copy moves (see the module docs).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, Serialize)]
pub struct TmaTile {
    /// Bytes per row of the tensor, which is also its row stride (a multiple of 16).
    pub row_bytes: u32,
    /// Rows of the box (1 to 256).
    pub box_rows: u32,
    /// Bytes per row of the box (a multiple of 16, at most 256, and at most `swizzle` when
    /// swizzled).
    pub box_bytes: u32,
    /// The shared-memory swizzle: 0 (none), 32, 64 or 128 bytes.
    pub swizzle: u32,
}

impl TmaTile {
    /// Bytes one copy writes to shared memory (out-of-bounds parts as zeros).
    pub const fn box_size(&self) -> u32 {
        self.box_rows * self.box_bytes
    }

    /// Whether the map is one the hardware accepts over a tensor of `tensor_bytes`, and if not,
    /// which rule it breaks.
    pub fn check(&self, tensor_bytes: usize) -> Result<(), TensorMapError> {
        let bad = |rule: &str| Err(TensorMapError::Invalid { tile: *self, rule: rule.to_string() });
        if self.row_bytes == 0 || !self.row_bytes.is_multiple_of(16) {
            return bad("`row_bytes` must be a positive multiple of 16");
        }
        if tensor_bytes == 0 || !tensor_bytes.is_multiple_of(self.row_bytes as usize) {
            return bad(&format!("the tensor's {tensor_bytes} bytes are not a whole number of rows"));
        }
        if !(1..=256).contains(&self.box_rows) {
            return bad("`box_rows` must be 1 to 256");
        }
        if self.box_bytes == 0 || !self.box_bytes.is_multiple_of(16) || self.box_bytes > 256 {
            return bad("`box_bytes` must be a multiple of 16 from 16 to 256");
        }
        match self.swizzle {
            0 => Ok(()),
            32 | 64 | 128 if self.box_bytes <= self.swizzle => Ok(()),
            32 | 64 | 128 => bad("a swizzled box's rows must be at most `swizzle` bytes"),
            _ => bad("`swizzle` must be 0, 32, 64 or 128"),
        }
    }
}

/// A map that cannot be encoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TensorMapError {
    #[error("tensor map {tile:?}: {rule}")]
    Invalid { tile: TmaTile, rule: String },
    #[error("tensor map {tile:?}: the driver refused it: {reason}")]
    Driver { tile: TmaTile, reason: String },
    #[error("tensor map: the buffer's device address is unknown: {0}")]
    Address(String),
}

/// The map of `tile` over `bytes` bytes at byte `offset` of `handle`'s buffer, as `client`'s
/// device reads it: encoded on CUDA, zeros elsewhere (see the module docs). Checked first.
pub fn map_for(
    client: &Client,
    handle: &Handle,
    offset: usize,
    bytes: usize,
    tile: &TmaTile,
) -> Result<[u8; MAP_BYTES], TensorMapError> {
    tile.check(bytes)?;
    match device_address(client, handle)? {
        Some(address) => encode(address + offset as u64, bytes, tile),
        None => Ok([0; MAP_BYTES]),
    }
}

/// The device address of `handle`'s buffer on CUDA, `None` on another runtime.
fn device_address(client: &Client, handle: &Handle) -> Result<Option<u64>, TensorMapError> {
    #[cfg(feature = "cuda")]
    {
        use cubecl_runtime::runtime::Runtime;
        type Server = <cubecl::cuda::CudaRuntime as Runtime>::Server;
        if client.name() == "cuda" {
            let resource =
                client.get_resource::<Server>(handle.clone()).map_err(|e| TensorMapError::Address(e.to_string()))?;
            return Ok(Some(resource.resource().ptr));
        }
    }
    let _ = (client, handle);
    Ok(None)
}

/// `cuTensorMapEncodeTiled` for `tile` over `bytes` bytes at device address `address`.
#[cfg(feature = "cuda")]
fn encode(address: u64, bytes: usize, tile: &TmaTile) -> Result<[u8; MAP_BYTES], TensorMapError> {
    use cudarc::driver::sys::*;
    let dims = [u64::from(tile.row_bytes), (bytes / tile.row_bytes as usize) as u64];
    let strides = [u64::from(tile.row_bytes)];
    let boxes = [tile.box_bytes, tile.box_rows];
    let element_strides = [1u32, 1];
    let swizzle = match tile.swizzle {
        32 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
        64 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
        128 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
        _ => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
    };
    let mut map = std::mem::MaybeUninit::<CUtensorMap>::zeroed();
    let driver =
        |status: CUresult| status.result().map_err(|e| TensorMapError::Driver { tile: *tile, reason: e.to_string() });
    // The driver encodes in a current context: the primary one of the buffer's device, which is
    // the one CubeCL's CUDA runtime runs in, made current on this thread for the call.
    let mut ordinal: std::ffi::c_int = 0;
    let mut device: CUdevice = 0;
    let mut context: CUcontext = std::ptr::null_mut();
    // SAFETY: each out-pointer is a live local of the type the call writes.
    unsafe {
        driver(cuPointerGetAttribute(
            (&mut ordinal as *mut std::ffi::c_int).cast(),
            CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
            address,
        ))?;
        driver(cuDeviceGet(&mut device, ordinal))?;
        driver(cuDevicePrimaryCtxRetain(&mut context, device))?;
        driver(cuCtxPushCurrent_v2(context))?;
    }
    // SAFETY: `map` is writable and 64-byte aligned (`CUtensorMap`'s alignment); the four arrays
    // hold `rank` (2) entries each and outlive the call; `address` is a device allocation of at
    // least `bytes` bytes (a CubeCL buffer) that the caller keeps alive while the map is used.
    let status = unsafe {
        cuTensorMapEncodeTiled(
            map.as_mut_ptr(),
            CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT8,
            2,
            address as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            element_strides.as_ptr(),
            CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            swizzle,
            CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    // SAFETY: the context pushed above, and the device's primary context retained above.
    unsafe {
        let mut popped: CUcontext = std::ptr::null_mut();
        driver(cuCtxPopCurrent_v2(&mut popped))?;
        driver(cuDevicePrimaryCtxRelease_v2(device))?;
    }
    driver(status)?;
    // SAFETY: the driver wrote the whole map (it succeeded), and before that it was zeroed.
    let map = unsafe { map.assume_init() };
    // SAFETY: `CUtensorMap` is 128 bytes of plain data.
    Ok(unsafe { std::mem::transmute::<CUtensorMap, [u8; MAP_BYTES]>(map) })
}

#[cfg(not(feature = "cuda"))]
fn encode(_: u64, _: usize, _: &TmaTile) -> Result<[u8; MAP_BYTES], TensorMapError> {
    unreachable!("only a CUDA buffer has a device address here")
}

#[cfg(test)]
mod tests {
    use super::*;

    const TILE: TmaTile = TmaTile { row_bytes: 128, box_rows: 8, box_bytes: 128, swizzle: 128 };

    /// Each rule the hardware sets is one the check enforces, by name.
    #[test]
    fn a_map_the_hardware_refuses_is_an_error_naming_the_rule() {
        assert_eq!(TILE.check(1024), Ok(()));
        let rule = |tile: TmaTile, bytes: usize| match tile.check(bytes) {
            Err(TensorMapError::Invalid { rule, .. }) => rule,
            other => panic!("{tile:?} over {bytes} bytes: {other:?}"),
        };
        assert!(rule(TILE, 1000).contains("whole number of rows"));
        assert!(rule(TmaTile { row_bytes: 24, ..TILE }, 1024).contains("row_bytes"));
        assert!(rule(TmaTile { box_rows: 0, ..TILE }, 1024).contains("box_rows"));
        assert!(rule(TmaTile { box_rows: 257, ..TILE }, 1024).contains("box_rows"));
        assert!(rule(TmaTile { box_bytes: 40, ..TILE }, 1024).contains("box_bytes"));
        assert!(rule(TmaTile { box_bytes: 64, swizzle: 32, ..TILE }, 1024).contains("at most `swizzle`"));
        assert!(rule(TmaTile { swizzle: 16, ..TILE }, 1024).contains("`swizzle` must be"));
        assert_eq!(TmaTile { box_bytes: 256, swizzle: 0, ..TILE }.check(1024), Ok(()));
    }
}
