package lastseat.db;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The settings an H2 file is opened with: each commit in the file before it returns, and findable after kill -9. */
class DurableUrlTest {

    @Test
    void anH2FileIsOpenedWithCommitsWrittenAtOnceAndAppendedAtTheEnd() {
        assertThat(Database.durable("jdbc:h2:file:./data/lastseat"))
                .isEqualTo("jdbc:h2:async:./data/lastseat;WRITE_DELAY=0;REUSE_SPACE=FALSE;DB_CLOSE_ON_EXIT=FALSE");
    }

    @Test
    void aSettingNamedInTheUrlIsLeftAsItIs() {
        assertThat(Database.durable("jdbc:h2:file:/tmp/x;reuse_space=TRUE;WRITE_DELAY=100"))
                .isEqualTo("jdbc:h2:async:/tmp/x;reuse_space=TRUE;WRITE_DELAY=100;DB_CLOSE_ON_EXIT=FALSE");
    }

    @Test
    void aPathWithoutSchemeIsAFileToH2AndGetsTheSameSettings() {
        assertThat(Database.durable("jdbc:h2:./data/x")).isEqualTo("jdbc:h2:async:./data/x;WRITE_DELAY=0;REUSE_SPACE=FALSE;DB_CLOSE_ON_EXIT=FALSE");
        assertThat(Database.durable("jdbc:h2:~/x")).isEqualTo("jdbc:h2:async:~/x;WRITE_DELAY=0;REUSE_SPACE=FALSE;DB_CLOSE_ON_EXIT=FALSE");
        assertThat(Database.durable("jdbc:h2:C:/data/x")).isEqualTo("jdbc:h2:async:C:/data/x;WRITE_DELAY=0;REUSE_SPACE=FALSE;DB_CLOSE_ON_EXIT=FALSE");
    }

    @Test
    void anotherSchemeIsLeftToItself() {
        assertThat(Database.durable("jdbc:h2:tcp://db:9092/x")).isEqualTo("jdbc:h2:tcp://db:9092/x;DB_CLOSE_ON_EXIT=FALSE");
        assertThat(Database.durable("jdbc:h2:nio:/x;WRITE_DELAY=0")).isEqualTo("jdbc:h2:nio:/x;WRITE_DELAY=0;DB_CLOSE_ON_EXIT=FALSE");
    }

    @Test
    void inMemoryAndPostgresUrlsGetNoFileSettings() {
        assertThat(Database.durable("jdbc:h2:mem:t")).isEqualTo("jdbc:h2:mem:t;DB_CLOSE_ON_EXIT=FALSE");
        assertThat(Database.durable("jdbc:postgresql://127.0.0.1:5432/test")).isEqualTo("jdbc:postgresql://127.0.0.1:5432/test");
    }
}
