//! GLSL compute shaders written by hand ("incumbents" of a Vulkan engine), run on a CubeCL wgpu
//! client's own device, queue and buffers, so that they are compared with an island kernel on
//! equal terms.
//!
//! CubeCL 0.11 cannot launch them itself: its SPIR-V compiler refuses precompiled kernels, and
//! its wgpu path takes precompiled text only as WGSL or MSL. What it does give is the `wgpu`
//! device behind a client, when the client is opened through `cubecl::wgpu::init_setup`
//! (which [`crate::launch::runtimes::RuntimeName::client`] does for `vulkan`, keeping the device and
//! queue here), and each buffer's `wgpu::Buffer` through `ComputeClient::get_resource`. A launch
//! then: compiles the GLSL once (naga's GLSL front end, through wgpu) into a pipeline whose
//! bindings are the buffers in order (`layout(set = 0, binding = i)`, storage buffers only:
//! scalars go in a buffer of their own); flushes CubeCL's queued work to the queue; records one
//! dispatch in a command buffer of its own and submits it to the same queue, so it runs after
//! every kernel CubeCL launched before it and before every one launched after. Reads and syncs
//! through the client wait for it like for CubeCL's own work.
//!
//! naga 30's GLSL front end lowers `barrier()` to a control barrier of *subgroup* execution scope
//! (its `Barrier::all()` includes the subgroup flag, which the SPIR-V writer takes for the
//! scope), and knows no `memoryBarrierShared()`: a workgroup wider than one subgroup that
//! exchanges values through shared memory races. Measured on the H200's Vulkan driver
//! (2026-12-02): an RMSNorm of 256 invocations a row gave values up to 4·10^8 ulp away. Such an
//! incumbent must keep its exchanges within one subgroup.

use crate::codegen::foreign::ForeignError;
use cubecl::prelude::*;
use cubecl::server::Handle;

/// A GLSL compute shader written by hand: its text (entry point `main`) and its workgroup size.
#[derive(Clone, Copy, Debug)]
pub struct GlslKernel {
    pub source: &'static str,
    /// `local_size_x/y/z`, as the text declares them.
    pub workgroup: (u32, u32, u32),
}

#[cfg(not(feature = "wgpu"))]
impl GlslKernel {
    /// Launching needs the `wgpu` feature: without it, an error.
    pub fn launch(&self, client: &Client, _groups: (u32, u32, u32), _buffers: &[&Handle]) -> Result<(), ForeignError> {
        Err(ForeignError::NotWgpu(client.name()))
    }
}

#[cfg(feature = "vulkan")]
pub(crate) use with_wgpu::keep;

#[cfg(feature = "wgpu")]
mod with_wgpu {
    use super::*;
    use cubecl::wgpu::wgpu;
    use std::sync::{Mutex, OnceLock};

    /// The device and queue behind the process's `vulkan` client.
    static SETUP: OnceLock<(wgpu::Device, wgpu::Queue)> = OnceLock::new();

    /// Keeps the device and queue of the `vulkan` client (`crate::launch::runtimes`).
    #[cfg(feature = "vulkan")]
    pub(crate) fn keep(device: wgpu::Device, queue: wgpu::Queue) {
        let _ = SETUP.set((device, queue));
    }

    /// Compiled pipelines, by the text's hash.
    static PIPELINES: Mutex<Vec<(u64, wgpu::ComputePipeline)>> = Mutex::new(Vec::new());

    type Server = cubecl::wgpu::WgpuServer<cubecl::wgpu::AutoCompiler>;

    /// A buffer's identity: its memory and the slice of it the handle covers.
    type BufferKey = (usize, Option<u64>, Option<u64>);

    /// Bind groups of recent launches, with the resources they bind: holding a resource keeps its
    /// allocation in place (CubeCL's `ManagedResource`), so the bind group stays valid, and a launch
    /// on the same buffers skips the round trips to CubeCL's device thread that looking the buffers
    /// up costs. At most [`BIND_GROUPS`] are kept; the oldest goes first.
    type Bound = (
        u64,
        Vec<BufferKey>,
        wgpu::BindGroup,
        Vec<cubecl_runtime::storage::ManagedResource<cubecl::wgpu::WgpuResource>>,
    );
    static BOUND: Mutex<Vec<Bound>> = Mutex::new(Vec::new());
    const BIND_GROUPS: usize = 64;

    fn bind_group(
        client: &Client,
        device: &wgpu::Device,
        pipeline: &(u64, wgpu::ComputePipeline),
        buffers: &[&Handle],
    ) -> Result<wgpu::BindGroup, ForeignError> {
        let keys: Vec<BufferKey> =
            buffers.iter().map(|h| (h.memory.descriptor().id.value, h.offset_start, h.offset_end)).collect();
        let mut bound = BOUND.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, _, group, _)) = bound.iter().find(|(p, k, _, _)| *p == pipeline.0 && *k == keys) {
            return Ok(group.clone());
        }
        let resources = buffers
            .iter()
            .map(|h| client.get_resource::<Server>((*h).clone()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ForeignError::Runtime(e.to_string()))?;
        let entries: Vec<wgpu::BindGroupEntry> = resources
            .iter()
            .enumerate()
            .map(|(i, r)| wgpu::BindGroupEntry { binding: i as u32, resource: r.resource().as_wgpu_bind_resource() })
            .collect();
        let layout = pipeline.1.get_bind_group_layout(0);
        let group =
            device.create_bind_group(&wgpu::BindGroupDescriptor { label: None, layout: &layout, entries: &entries });
        if bound.len() >= BIND_GROUPS {
            bound.remove(0);
        }
        bound.push((pipeline.0, keys, group.clone(), resources));
        Ok(group)
    }

    impl GlslKernel {
        fn pipeline(&self, device: &wgpu::Device) -> Result<(u64, wgpu::ComputePipeline), ForeignError> {
            let hash = crate::values::hash::fnv1a(self.source.as_bytes());
            let mut cache = PIPELINES.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((_, p)) = cache.iter().find(|(h, _)| *h == hash) {
                return Ok((hash, p.clone()));
            }
            let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
            let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some("islands incumbent"),
                source: wgpu::ShaderSource::Glsl {
                    shader: self.source.into(),
                    stage: wgpu::naga::ShaderStage::Compute,
                    defines: &[],
                },
            });
            let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some("islands incumbent"),
                layout: None,
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            });
            if let Some(error) = cubecl_environment::future::block_on(scope.pop()) {
                return Err(ForeignError::Compile(crate::values::readback::first_lines(&error.to_string(), 12)));
            }
            cache.push((hash, pipeline.clone()));
            Ok((hash, pipeline))
        }

        /// Launches the shader on `client` (the process's `vulkan` client) over `groups`
        /// workgroups, with `buffers` bound in order. Like a CubeCL launch it only enqueues.
        pub fn launch(
            &self,
            client: &Client,
            groups: (u32, u32, u32),
            buffers: &[&Handle],
        ) -> Result<(), ForeignError> {
            if !client.name().starts_with("wgpu") {
                return Err(ForeignError::NotWgpu(client.name()));
            }
            let (device, queue) = SETUP.get().ok_or(ForeignError::NoWgpuDevice)?;
            let pipeline = self.pipeline(device)?;
            // CubeCL's queued work (uploads, the kernels this one reads from) goes to the queue first.
            client.flush().map_err(|e| ForeignError::Runtime(e.to_string()))?;
            let bind = bind_group(client, device, &pipeline, buffers)?;
            let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
            {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
                pass.set_pipeline(&pipeline.1);
                pass.set_bind_group(0, &bind, &[]);
                pass.dispatch_workgroups(groups.0, groups.1, groups.2);
            }
            queue.submit([encoder.finish()]);
            Ok(())
        }
    }
}
