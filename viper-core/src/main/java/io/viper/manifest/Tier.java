package io.viper.manifest;

/** Where the bytes of a location live; the path selector prefers lower ordinals. */
public enum Tier {
    /** Accelerator memory (CUDA). */
    GPU,
    /** Host RAM, read over UCX (RDMA or shared memory) or TCP. */
    HOST,
    /** The parallel file system repository. */
    PFS
}
