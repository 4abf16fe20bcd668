//! CLI
