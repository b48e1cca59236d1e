pub mod data;
pub mod engine;
