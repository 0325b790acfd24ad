package io.viper.transfer.gpu.internal;

import io.viper.hash.ParallelHash64;

/**
 * The PTX of the {@link ParallelHash64} kernels, generated from the hash's constants so that host
 * and device can never disagree, and loaded with {@code cuModuleLoadData} (the driver compiles PTX
 * for the GPU it runs on; no CUDA toolkit is needed at build or run time).
 *
 * <p>Each kernel sums {@code term(i, word[i])} over the full 8-byte words {@code i < words} with a
 * grid-stride loop, one register sum per thread, then one 64-bit {@code atom.add} per thread into
 * {@code *out} (addition mod 2^64 is commutative, so the result does not depend on scheduling). The
 * partial last word and the final mix are done on the host. {@link #ALIGNED} loads 64-bit words and
 * needs an 8-byte-aligned address; {@link #UNALIGNED} assembles each word from 8 byte loads.
 */
final class HashKernel {
    static final String ALIGNED = "viper_phash64_aligned";
    static final String UNALIGNED = "viper_phash64_bytes";

    private HashKernel() {
    }

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
                load.append("\tld.global.u8 %rs1, [%rd8+").append(b).append("];\n")
                        .append("\tcvt.u64.u16 %rd13, %rs1;\n")
                        .append("\tshl.b64 %rd13, %rd13, ").append(8 * b).append(";\n")
                        .append("\tor.b64 %rd9, %rd9, %rd13;\n");
            }
        } else {
            load.append("\tld.global.nc.u64 %rd9, [%rd8];\n");
        }
        return ".visible .entry " + name + "(\n"
                + "\t.param .u64 p_data,\n\t.param .u64 p_words,\n\t.param .u64 p_out\n)\n{\n"
                + "\t.reg .pred %p<2>;\n\t.reg .b16 %rs<2>;\n\t.reg .b32 %r<5>;\n\t.reg .b64 %rd<14>;\n"
                + "\tld.param.u64 %rd1, [p_data];\n\tld.param.u64 %rd2, [p_words];\n\tld.param.u64 %rd3, [p_out];\n"
                + "\tcvta.to.global.u64 %rd1, %rd1;\n\tcvta.to.global.u64 %rd3, %rd3;\n"
                + "\tmov.u32 %r1, %ctaid.x;\n\tmov.u32 %r2, %ntid.x;\n\tmov.u32 %r3, %tid.x;\n\tmov.u32 %r4, %nctaid.x;\n"
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
                + "\tatom.global.add.u64 %rd12, [%rd3], %rd7;\n"
                + "\tret;\n}\n";
    }
}
