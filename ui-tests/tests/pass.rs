//! Islands written where users write them (expression, statement, helper, in loops and branches, an intrinsic
//! on a backend it has no lowering for): each module must compile. They are compiled here, with
//! the workspace's own build of CubeCL, rather than through trybuild, which would build CubeCL a
//! second time in its own target directory.

mod pass {
    pub mod branches;
    pub mod expression;
    pub mod helper;
    pub mod intrinsic_on_undeclared_backend;
    pub mod statement;
}
