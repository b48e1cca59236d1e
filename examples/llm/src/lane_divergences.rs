//! The measured divergences of [`crate::lanes`]' islands, kept apart from their source: the
//! cells' twins hash `lanes.rs`, and what a device was measured to do is not the kernels' code.

use island_runtime::divergence::{Divergence, Of};
use island_runtime::quirks;

// NVIDIA's Vulkan driver flushes subnormal operands of `max8`'s maximum, natively and in
// `default` (`island_runtime::quirks::NVIDIA_VULKAN_MAX_OF_SHUFFLED_FLUSHES`).
island_runtime::divergence!(Divergence {
    of: Of::Native,
    quirk: &quirks::NVIDIA_VULKAN_MAX_OF_SHUFFLED_FLUSHES,
    islands: &["island_llm::lanes::max8#0"],
});

island_runtime::divergence!(Divergence {
    of: Of::Default,
    quirk: &quirks::NVIDIA_VULKAN_FLUSHES_ARITHMETIC,
    islands: &["island_llm::lanes::max8#0"],
});
