package lastseat.drills;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * kill -9 against a process committing to an H2 file ({@link KillCommits}): with space reused and freed
 * at once, H2 2.5.252 loses the newest chunks — commits that had returned — so the campaign can see a
 * loss; with the service's settings ({@code REUSE_SPACE=FALSE}) the same pressure never sends a row
 * back to an older state. A failure names its seed.
 *
 * <p>What this does not assert: H2 2.5.252 also loses, at about one kill in 20 to 40 with 8 to 16
 * writers, a whole row whose insert and updates had returned (docs/GUARANTEES.md). That loss is open;
 * {@code bin/drill kill-commits} fails on it, and a test that failed one run in five would be noise.
 */
class KillCommitsTest {
    private static final long SEED = System.currentTimeMillis();

    @Test
    void withSpaceReusedAKillLosesCommitsThatHadReturned(@TempDir Path dir) throws Exception {
        List<KillCommits.Round> rounds = KillCommits.campaign(dir, SEED, KillCommits.UNSAFE_ROUNDS, KillCommits.UNSAFE, true, r -> { });

        assertThat(rounds).as("seed " + SEED + ": " + rounds).anyMatch(r -> r.wentBack() > 0);
        assertThat(ProcessHandle.current().children()).as("every writer was killed and reaped").isEmpty();
    }

    @Test
    void withTheServicesSettingsNoKillSendsARowBackToAnOlderState(@TempDir Path dir) throws Exception {
        List<KillCommits.Round> rounds = KillCommits.campaign(dir, SEED, 6, KillCommits.SAFE, false, r -> { });

        assertThat(rounds).hasSize(6);
        assertThat(rounds).as("seed " + SEED + ": " + rounds).allMatch(r -> r.wentBack() == 0);
        assertThat(rounds).as("every round committed before its kill").allMatch(r -> r.printed() > 0);
        assertThat(ProcessHandle.current().children()).as("every writer was killed and reaped").isEmpty();
    }
}
