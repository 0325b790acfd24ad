package io.viper.architecture;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.classfile.Attributes;
import java.lang.classfile.ClassFile;
import java.lang.classfile.ClassModel;
import java.lang.classfile.CodeElement;
import java.lang.classfile.MethodModel;
import java.lang.classfile.Opcode;
import java.lang.classfile.instruction.InvokeInstruction;
import java.lang.classfile.instruction.LineNumber;
import java.lang.classfile.instruction.NewReferenceArrayInstruction;
import java.lang.constant.ClassDesc;
import java.lang.constant.ConstantDescs;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Set;

/**
 * The rule that log lines print plain numbers. {@code System.Logger.log(level, format, params...)} fills {@code {N}}
 * with {@link java.text.MessageFormat} in every logging backend (java.util.logging, SLF4J, Log4j), which writes a
 * number in the default locale with grouping separators: a backoff of 30000 ms read "30,000 ms", a version
 * "v1,795,484,765,965". Numbers go in as strings ({@code Long.toString}) instead.
 *
 * <p>Read from the bytecode: a primitive boxed ({@code Long.valueOf} and the like) while the {@code Object[]} of a
 * {@code log} call's parameters is being filled is a number among them; one boxed into the array of a call made
 * meanwhile ({@code String.format}) belongs to that call.
 */
final class LogParameters {
    private static final ClassDesc LOGGER = ClassDesc.of("java.lang.System$Logger");
    private static final ClassDesc OBJECTS = ConstantDescs.CD_Object.arrayType();
    private static final Set<ClassDesc> NUMBERS = Set.of(
            ConstantDescs.CD_Long,
            ConstantDescs.CD_Integer,
            ConstantDescs.CD_Short,
            ConstantDescs.CD_Byte,
            ConstantDescs.CD_Double,
            ConstantDescs.CD_Float);

    private LogParameters() {}

    /** One line per log call that hands a number to MessageFormat: "class.method(File.java:line)". */
    static List<String> numbersFormattedByMessageFormat(Iterable<String> classNames, ClassLoader loader) {
        List<String> lines = new ArrayList<>();
        for (String name : classNames) {
            ClassModel c = ClassFile.of().parse(bytes(name, loader));
            String file = c.findAttribute(Attributes.sourceFile())
                    .map(a -> a.sourceFile().stringValue())
                    .orElse("?");
            for (MethodModel m : c.methods()) {
                m.code().ifPresent(code -> {
                    // one entry per Object[] being filled: whether a number was boxed into it
                    Deque<boolean[]> arrays = new ArrayDeque<>();
                    int line = -1;
                    for (CodeElement e : code) {
                        if (e instanceof LineNumber ln) {
                            line = ln.line();
                        } else if (e instanceof NewReferenceArrayInstruction a
                                && a.componentType().asSymbol().equals(ConstantDescs.CD_Object)) {
                            arrays.push(new boolean[1]);
                        } else if (e instanceof InvokeInstruction i) {
                            if (i.opcode() == Opcode.INVOKESTATIC
                                    && i.name().equalsString("valueOf")
                                    && NUMBERS.contains(i.owner().asSymbol())) {
                                if (!arrays.isEmpty()) {
                                    arrays.peek()[0] = true;
                                }
                            } else if (i.typeSymbol().parameterList().contains(OBJECTS) && !arrays.isEmpty()) {
                                boolean boxed = arrays.pop()[0];
                                if (boxed
                                        && i.owner().asSymbol().equals(LOGGER)
                                        && i.name().equalsString("log")) {
                                    lines.add(
                                            name + "." + m.methodName().stringValue() + "(" + file + ":" + line + ")");
                                }
                            }
                        }
                    }
                });
            }
        }
        return lines;
    }

    private static byte[] bytes(String className, ClassLoader loader) {
        String resource = className.replace('.', '/') + ".class";
        try (InputStream in = loader.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("no class file " + resource);
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
