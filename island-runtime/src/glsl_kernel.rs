//! GLSL compute shaders written by hand ("incumbents" of a Vulkan engine), run on a CubeCL wgpu
//! client's own device, queue and buffers, so that they are compared with an island kernel on
//! equal terms.
//!
//! CubeCL 0.11 cannot launch them itself: its SPIR-V compiler refuses precompiled kernels, and
//! its wgpu path takes precompiled text only as WGSL or MSL. What it does give is the `wgpu`
//! device behind a client, when the client is opened through `cubecl::wgpu::init_setup`
//! (which [`crate::runtimes::RuntimeName::client`] does for `vulkan`, keeping the device and
//! queue here), and each buffer's `wgpu::Buffer` through `ComputeClient::get_resource`. A launch
//! then: compiles the GLSL once (naga's GLSL front end, through wgpu) into a pipeline whose
//! bindings are the buffers in order (`layout(set = 0, binding = i)`, storage buffers only:
//! scalars go in a buffer of their own); flushes CubeCL's queued work to the queue; records one
//! dispatch in a command buffer of its own and submits it to the same queue, so it runs after
//! every kernel CubeCL launched before it and before every one launched after. Reads and syncs
//! through the client wait for it like for CubeCL's own work.

use crate::foreign::ForeignError;
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

#[cfg(feature = "wgpu")]
pub(crate) use with_wgpu::keep;

#[cfg(feature = "wgpu")]
mod with_wgpu {
    use super::*;
    use cubecl::wgpu::wgpu;
    use std::num::NonZeroU64;
    use std::sync::{Mutex, OnceLock};

    /// The device and queue behind the process's `vulkan` client.
    static SETUP: OnceLock<(wgpu::Device, wgpu::Queue)> = OnceLock::new();

    /// Keeps the device and queue of the `vulkan` client (`crate::runtimes`).
    pub(crate) fn keep(device: wgpu::Device, queue: wgpu::Queue) {
        let _ = SETUP.set((device, queue));
    }

    /// Compiled pipelines, by the text's hash.
    static PIPELINES: Mutex<Vec<(u64, wgpu::ComputePipeline)>> = Mutex::new(Vec::new());

    type Server = cubecl::wgpu::WgpuServer<cubecl::wgpu::AutoCompiler>;

    impl GlslKernel {
        fn pipeline(&self, device: &wgpu::Device) -> Result<wgpu::ComputePipeline, ForeignError> {
            let hash = crate::hash::fnv1a(self.source.as_bytes());
            let mut cache = PIPELINES.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((_, p)) = cache.iter().find(|(h, _)| *h == hash) {
                return Ok(p.clone());
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
                return Err(ForeignError::Compile(crate::readback::first_lines(&error.to_string(), 12)));
            }
            cache.push((hash, pipeline.clone()));
            Ok(pipeline)
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
            client.flush().map_err(|e| ForeignError::Runtime(e.to_string()))?;
            let resources = buffers
                .iter()
                .map(|h| client.get_resource::<Server>((*h).clone()))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| ForeignError::Runtime(e.to_string()))?;
            let entries: Vec<wgpu::BindGroupEntry> = resources
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let r = r.resource();
                    wgpu::BindGroupEntry {
                        binding: i as u32,
                        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                            buffer: &r.buffer,
                            offset: r.offset,
                            size: NonZeroU64::new(r.size),
                        }),
                    }
                })
                .collect();
            let layout = pipeline.get_bind_group_layout(0);
            let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: None,
                layout: &layout,
                entries: &entries,
            });
            let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
            {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
                pass.set_pipeline(&pipeline);
                pass.set_bind_group(0, &bind, &[]);
                pass.dispatch_workgroups(groups.0, groups.1, groups.2);
            }
            queue.submit([encoder.finish()]);
            Ok(())
        }
    }
}
