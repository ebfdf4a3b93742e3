//! [`DeviceBuffer`]: an array in device memory.

use cudarc::driver::CudaSlice;

/// `len` values of `T` in device memory, freed on drop (stream-ordered). Made only by
/// [`super::CudaContext`] (uploads, zeros), so every host copy is counted there.
#[derive(Debug)]
pub struct DeviceBuffer<T> {
    slice: CudaSlice<T>,
}

impl<T> DeviceBuffer<T> {
    pub(crate) fn new(slice: CudaSlice<T>) -> Self {
        Self { slice }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.slice.len()
    }

    /// True if the buffer holds no value.
    pub fn is_empty(&self) -> bool {
        self.slice.len() == 0
    }

    /// Bytes of device memory the values take.
    pub fn bytes(&self) -> usize {
        self.slice.len() * std::mem::size_of::<T>()
    }

    pub(crate) fn slice(&self) -> &CudaSlice<T> {
        &self.slice
    }

    pub(crate) fn into_slice(self) -> CudaSlice<T> {
        self.slice
    }

    pub(crate) fn slice_mut(&mut self) -> &mut CudaSlice<T> {
        &mut self.slice
    }
}

// Kernel arguments: a buffer passes its device pointer.
// SAFETY: forwards to cudarc's own implementations for the wrapped slice.
unsafe impl<'a, 'b: 'a, T> cudarc::driver::PushKernelArg<&'b DeviceBuffer<T>>
    for cudarc::driver::LaunchArgs<'a>
{
    #[inline(always)]
    fn arg(&mut self, arg: &'b DeviceBuffer<T>) -> &mut Self {
        self.arg(&arg.slice)
    }
}

// SAFETY: as above, for buffers the kernel writes.
unsafe impl<'a, 'b: 'a, T> cudarc::driver::PushKernelArg<&'b mut DeviceBuffer<T>>
    for cudarc::driver::LaunchArgs<'a>
{
    #[inline(always)]
    fn arg(&mut self, arg: &'b mut DeviceBuffer<T>) -> &mut Self {
        self.arg(&mut arg.slice)
    }
}
