package lastseat.ops;

import lastseat.support.Invariants;
import lastseat.support.LastseatApp;
import lastseat.testkit.Answer;
import lastseat.testkit.Instance;
import lastseat.testkit.TempDirs;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.WebDriverWait;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.abort;

/**
 * The operator's page in a real browser (headless Chromium through Selenium), against a real server:
 * it opens one event's map from the URL fragment with the operator's key, a seat bought through the API
 * turns SOLD on the page without a reload (server-sent events), a purchase's timeline shows its steps as
 * bars, and the key leaves the address bar. Screenshots go to {@code target/ops-*.png}.
 *
 * <p>Needs Debian's {@code chromium} and {@code chromium-driver} (or Chrome and a chromedriver on the
 * PATH): skipped loudly without them, unless {@code LASTSEAT_REQUIRE_BROWSER=1} (.ci/run), then it fails.
 */
class OpsPageTest {
    @RegisterExtension
    static final LastseatApp app = LastseatApp.with(Map.of("ops.keep-alive", "1s", "ops.poll-interval", "100ms"));

    private static final Duration WAIT = Duration.ofSeconds(15);
    private static WebDriver browser;
    /** Chromium's profile, removed with the browser. */
    private static Path profile;

    @BeforeAll
    static void openABrowser() throws Exception {
        Optional<Path> chromium = found("/usr/bin/chromium", "chromium", "google-chrome", "chrome");
        Optional<Path> driver = found("/usr/bin/chromedriver", "chromedriver");
        if (chromium.isEmpty() || driver.isEmpty()) {
            String why = "no " + (chromium.isEmpty() ? "chromium" : "chromedriver") + " on this machine "
                         + "(apt-get install chromium chromium-driver)";
            if ("1".equals(System.getenv("LASTSEAT_REQUIRE_BROWSER"))) {
                throw new AssertionError("LASTSEAT_REQUIRE_BROWSER=1 but " + why);
            }
            System.err.println("SKIPPED: the operator page's browser test: " + why);
            abort(why);
        }
        ChromeOptions options = new ChromeOptions();
        options.setBinary(chromium.get().toFile());
        // Headless, and quiet: this machine's network is closed, and Chromium's background traffic only fails.
        options.addArguments("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                             "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
                             "--window-size=1280,900", "--user-data-dir=" + (profile = Files.createTempDirectory("lastseat-chromium")));
        ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(driver.get().toFile())
                .usingAnyFreePort().build();
        browser = new ChromeDriver(service, options);
    }

    @AfterAll
    static void closeTheBrowser() {
        if (browser != null) {
            browser.quit();
        }
        if (profile != null) {
            TempDirs.deleteQuietly(profile);
        }
    }

    @Test
    void aSeatBoughtThroughTheApiTurnsSoldOnTheMapWithoutAReloadAndItsPurchaseShowsItsSteps() throws Exception {
        Instance at = app.client().instance();
        String event = app.newEvent("A1", "A2", "A3", "A4", "A5", "A6", "B1", "B2", "B3", "B4", "B5", "B6");
        browser.get(at.admin() + "/ops/#event=" + event + "&key=" + at.operatorKey());
        seat("A1", "AVAILABLE");
        ((JavascriptExecutor) browser).executeScript("window.lastseatNoReload = true;");

        Answer bought = app.client().purchaseSeats(UUID.randomUUID().toString(), event, "A1");
        String id = bought.json().path("id").asText();
        seat("A1", "SOLD");
        Object sameDocument = ((JavascriptExecutor) browser).executeScript("return window.lastseatNoReload === true;");
        screenshot("ops-seat-map.png");

        ((JavascriptExecutor) browser).executeScript("location.hash = arguments[0];", "event=" + event + "&purchase=" + id);
        new WebDriverWait(browser, WAIT).until(b -> !b.findElements(By.cssSelector("#steps[data-purchase='" + id + "'] [data-step]")).isEmpty());
        List<WebElement> steps = browser.findElements(By.cssSelector("#steps [data-step]"));
        screenshot("ops-timeline.png");

        assertThat(bought.status()).as(bought.toString()).isEqualTo(201);
        assertThat(sameDocument).as("the page was not reloaded").isEqualTo(true);
        assertThat(browser.getCurrentUrl()).as("the key left the address bar").doesNotContain(at.operatorKey());
        assertThat(browser.findElements(By.cssSelector("#seats [data-seat]"))).hasSize(12);
        assertThat(browser.findElements(By.cssSelector("#seats [data-state='AVAILABLE']"))).hasSize(11);
        assertThat(steps.stream().map(s -> s.getDomAttribute("data-step")))
                .contains("reserve", "fraud", "tax", "bulkhead", "payment", "confirm");
        assertThat(steps).allSatisfy(s -> assertThat(s.getDomAttribute("data-outcome")).as(s.getDomAttribute("data-step")).isNotBlank());
        assertThat(browser.findElement(By.id("steps")).getDomAttribute("data-state")).isEqualTo("CONFIRMED");
        assertThat(browser.findElement(By.id("status")).getDomAttribute("data-status")).isEqualTo("ok");
        Invariants.hold(app, event);
        Invariants.resourcesCameBack(app);
    }

    @Test
    void thePageWithoutAKeySaysHowToGiveOneAndItsDataIsRefused() {
        Instance at = app.client().instance();
        String event = app.newEvent("A1");
        browser.get(at.admin() + "/ops/#event=" + event);
        ((JavascriptExecutor) browser).executeScript("sessionStorage.clear(); location.reload();");
        new WebDriverWait(browser, WAIT).until(b -> "error".equals(b.findElement(By.id("status")).getDomAttribute("data-status")));

        Answer page = app.client().send("GET", at.admin(), "/ops/", null, null, null);
        Answer data = app.client().send("GET", at.admin(), "/ops/api/waiting", null, null, null);

        assertThat(browser.findElement(By.id("status")).getText()).contains("key");
        assertThat(browser.findElements(By.cssSelector("#seats [data-seat]"))).isEmpty();
        assertThat(page.status()).as("the page's files hold no data").isEqualTo(200);
        assertThat(data.status()).as("what it reads does").isEqualTo(401);
        Invariants.resourcesCameBack(app);
    }

    @Test
    void aViewerThatLeavesGivesItsStreamBackAndTheEventsReaderStops() throws Exception {
        Instance at = app.client().instance();
        String event = app.newEvent("A1");
        browser.get(at.admin() + "/ops/#event=" + event + "&key=" + at.operatorKey());
        seat("A1", "AVAILABLE");
        OpsRoutes ops = app.services().opsRoutes();
        assertThat(ops.openStreams()).isEqualTo(1);

        browser.get("about:blank");
        long until = System.nanoTime() + WAIT.toNanos();
        while ((ops.openStreams() > 0 || ops.readers() > 0) && System.nanoTime() < until) {
            Thread.sleep(50);
        }

        assertThat(ops.openStreams()).as("the stream's place came back").isZero();
        assertThat(ops.readers()).as("no reader left for an event nobody watches").isZero();
        Invariants.resourcesCameBack(app);
    }

    private static void seat(String label, String state) {
        new WebDriverWait(browser, WAIT).until(b -> !b.findElements(
                By.cssSelector("#seats [data-seat='" + label + "'][data-state='" + state + "']")).isEmpty());
    }

    private static void screenshot(String name) throws Exception {
        File shot = ((TakesScreenshot) browser).getScreenshotAs(OutputType.FILE);
        // Beside the test classes: target/ of the build, wherever the tests were started from.
        Path target = Path.of(OpsPageTest.class.getProtectionDomain().getCodeSource().getLocation().toURI()).getParent().resolve(name);
        Files.createDirectories(target.getParent());
        Files.copy(shot.toPath(), target, StandardCopyOption.REPLACE_EXISTING);
    }

    private static Optional<Path> found(String... names) {
        return Stream.of(names).flatMap(name -> name.startsWith("/") ? Stream.of(Path.of(name))
                        : Stream.of(System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)).map(dir -> Path.of(dir, name)))
                .filter(Files::isExecutable).findFirst();
    }
}
