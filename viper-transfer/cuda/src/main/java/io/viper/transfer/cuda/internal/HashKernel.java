package io.viper.transfer.cuda.internal;

import io.viper.hash.ParallelHash64;

/**
 * The PTX of the {@link ParallelHash64} kernels, generated from the hash's constants so that host and device can never
 * disagree, and loaded with {@code cuModuleLoadData} (the driver compiles PTX for the GPU it runs on; no CUDA toolkit
 * is needed at build or run time).
 *
 * <p>Each kernel sums {@code term(i, word[i])} over the full 8-byte words {@code i < words} with a grid-stride loop,
 * one register sum per thread, summed over each warp with shuffles, then one 64-bit {@code atom.add} per warp into
 * {@code *out} (addition mod 2^64 is commutative, so the result does not depend on scheduling). The partial last word
 * and the final mix are done on the host. {@link #ALIGNED} loads 64-bit words and needs an 8-byte-aligned address;
 * {@link #UNALIGNED} assembles each word from 8 byte loads.
 */
final class HashKernel {
    static final String ALIGNED = "viper_phash64_aligned";
    static final String UNALIGNED = "viper_phash64_bytes";

    private HashKernel() {}

    static String ptx() {
        return """
                .version 6.0
                .target sm_50
                .address_size 64

                """ + entry(ALIGNED, false) + "\n" + entry(UNALIGNED, true);
    }

    private static String entry(String name, boolean bytewise) {
        StringBuilder load = new StringBuilder();
        if (bytewise) {
            load.append("\tmov.u64 %rd9, 0;\n");
            for (int b = 0; b < 8; b++) {
                load.append("\tld.global.u8 %rs1, [%rd8+")
                        .append(b)
                        .append("];\n")
                        .append("\tcvt.u64.u16 %rd13, %rs1;\n")
                        .append("\tshl.b64 %rd13, %rd13, ")
                        .append(8 * b)
                        .append(";\n")
                        .append("\tor.b64 %rd9, %rd9, %rd13;\n");
            }
        } else {
            load.append("\tld.global.nc.u64 %rd9, [%rd8];\n");
        }
        return ".visible .entry " + name + "(\n"
                + "\t.param .u64 p_data,\n\t.param .u64 p_words,\n\t.param .u64 p_out\n)\n{\n"
                + "\t.reg .pred %p<3>;\n\t.reg .b16 %rs<2>;\n\t.reg .b32 %r<10>;\n\t.reg .b64 %rd<15>;\n"
                + "\tld.param.u64 %rd1, [p_data];\n\tld.param.u64 %rd2, [p_words];\n\tld.param.u64 %rd3, [p_out];\n"
                + "\tcvta.to.global.u64 %rd1, %rd1;\n\tcvta.to.global.u64 %rd3, %rd3;\n"
                + "\tmov.u32 %r1, %ctaid.x;\n\tmov.u32 %r2, %ntid.x;\n\tmov.u32 %r3, %tid.x;\n\tmov.u32 %r4,"
                + " %nctaid.x;\n"
                + "\tmul.wide.u32 %rd4, %r1, %r2;\n\tcvt.u64.u32 %rd5, %r3;\n\tadd.s64 %rd4, %rd4, %rd5;\n"
                + "\tmul.wide.u32 %rd6, %r4, %r2;\n\tmov.u64 %rd7, 0;\n"
                + "$L_" + name + "_loop:\n"
                + "\tsetp.ge.u64 %p1, %rd4, %rd2;\n\t@%p1 bra $L_" + name + "_done;\n"
                + "\tshl.b64 %rd8, %rd4, 3;\n\tadd.s64 %rd8, %rd1, %rd8;\n"
                + load
                + "\tadd.s64 %rd10, %rd4, 1;\n"
                + "\tmul.lo.s64 %rd10, %rd10, " + ParallelHash64.K1 + ";\n"
                + "\txor.b64 %rd9, %rd9, %rd10;\n"
                + "\tshr.u64 %rd11, %rd9, 33;\n\txor.b64 %rd9, %rd9, %rd11;\n"
                + "\tmul.lo.s64 %rd9, %rd9, " + ParallelHash64.M1 + ";\n"
                + "\tshr.u64 %rd11, %rd9, 33;\n\txor.b64 %rd9, %rd9, %rd11;\n"
                + "\tmul.lo.s64 %rd9, %rd9, " + ParallelHash64.M2 + ";\n"
                + "\tshr.u64 %rd11, %rd9, 33;\n\txor.b64 %rd9, %rd9, %rd11;\n"
                + "\tadd.s64 %rd7, %rd7, %rd9;\n"
                + "\tadd.s64 %rd4, %rd4, %rd6;\n"
                + "\tbra.uni $L_" + name + "_loop;\n"
                + "$L_" + name + "_done:\n"
                + warpSum()
                + "\tmov.u32 %r9, %laneid;\n\tsetp.ne.u32 %p2, %r9, 0;\n\t@%p2 bra $L_" + name + "_ret;\n"
                + "\tatom.global.add.u64 %rd12, [%rd3], %rd7;\n"
                + "$L_" + name + "_ret:\n"
                + "\tret;\n}\n";
    }

    /**
     * Sums {@code %rd7} over the warp into lane 0 (two 32-bit shuffles per step): one atomic per warp instead of per
     * thread, since a million threads adding into one word serialise on it (measured on an H100: about 0.8 ms per
     * tensor, whatever its size).
     */
    private static String warpSum() {
        StringBuilder b = new StringBuilder();
        for (int offset = 16; offset >= 1; offset >>= 1) {
            b.append("\tmov.b64 {%r5, %r6}, %rd7;\n")
                    .append("\tshfl.sync.down.b32 %r7, %r5, ")
                    .append(offset)
                    .append(", 31, -1;\n")
                    .append("\tshfl.sync.down.b32 %r8, %r6, ")
                    .append(offset)
                    .append(", 31, -1;\n")
                    .append("\tmov.b64 %rd14, {%r7, %r8};\n")
                    .append("\tadd.s64 %rd7, %rd7, %rd14;\n");
        }
        return b.toString();
    }
}
