package io.viper.demo.digits;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class LossLogExampleTest {

    @Test
    void writesOneRowPerIterationMatchingTheTrainer() throws IOException {
        LossLogExample.Options o = LossLogExample.parse(new String[] {"--iterations", "50", "--seed", "9"});
        assertEquals(50, o.horizon(), "horizon defaults to the number of iterations");
        StringBuilder out = new StringBuilder();
        double last = LossLogExample.run(o, out);
        String[] lines = out.toString().split("\n");
        assertEquals(51, lines.length);
        assertEquals("iteration,loss", lines[0]);
        Trainer reference = Trainer.defaults(50, 9);
        for (int i = 1; i <= 50; i++) {
            String[] f = lines[i].split(",");
            assertEquals(Integer.toString(i), f[0]);
            assertEquals(reference.step(), Double.parseDouble(f[1]), 1e-6);
        }
        assertEquals(reference.lastLoss(), last);
    }

    @Test
    void parsesOptionsAndRejectsBadOnes() {
        LossLogExample.Options o = LossLogExample.parse(new String[] {
            "--iterations", "10", "--horizon", "99", "--batch", "8", "--hidden", "16", "--out", "x.csv"
        });
        assertEquals(new LossLogExample.Options(10, 99, 42, 8, 16, Path.of("x.csv")), o);
        assertNull(LossLogExample.parse(new String[0]).out());
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> LossLogExample.parse(new String[] {"--iterations", "ten"}));
        assertTrue(e.getMessage().contains("--iterations: 'ten' is not an integer"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> LossLogExample.parse(new String[] {"--batch", "0"}));
        assertThrows(IllegalArgumentException.class, () -> LossLogExample.parse(new String[] {"--iterations"}));
        IllegalArgumentException unknown = assertThrows(
                IllegalArgumentException.class, () -> LossLogExample.parse(new String[] {"--epochs", "3"}));
        assertTrue(unknown.getMessage().contains("unknown option --epochs"), unknown.getMessage());
    }
}
