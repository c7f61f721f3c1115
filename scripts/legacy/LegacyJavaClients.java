import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.URL;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * Java's two HTTP clients through AuthGate: {@code java.net.http.HttpClient} forced to
 * HTTP/1.1 (no h2c upgrade is offered), and {@code HttpURLConnection}, each twice on
 * BASE/public/... and BASE/api/... (both keep connections alive between requests).
 *
 * <pre>java LegacyJavaClients.java BASE_URL EXPECTED_BODY</pre>
 * Prints one line per check and exits non-zero on any failure.
 */
public class LegacyJavaClients {
    static boolean failed = false;

    static void check(boolean ok, String what) {
        System.out.println((ok ? "ok   " : "FAIL ") + what);
        if (!ok) failed = true;
    }

    public static void main(String[] args) throws Exception {
        String base = args[0];
        String body = args[1];
        HttpClient client = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(10))
                .build();
        for (int i = 0; i < 2; i++) {
            for (String prefix : new String[] {"/public", "/api"}) {
                HttpRequest request = HttpRequest.newBuilder(URI.create(base + prefix + "/java-httpclient"))
                        .timeout(Duration.ofSeconds(10))
                        .GET()
                        .build();
                HttpResponse<String> r = client.send(request, HttpResponse.BodyHandlers.ofString());
                check(r.statusCode() == 200 && r.body().equals(body) && r.version() == HttpClient.Version.HTTP_1_1,
                        "HttpClient " + prefix + " #" + i + ": " + r.statusCode() + " " + r.version());
            }
        }
        for (int i = 0; i < 2; i++) {
            for (String prefix : new String[] {"/public", "/api"}) {
                HttpURLConnection c = (HttpURLConnection) new URL(base + prefix + "/java-urlconnection").openConnection();
                c.setConnectTimeout(10000);
                c.setReadTimeout(10000);
                int status = c.getResponseCode();
                String got;
                try (InputStream in = c.getInputStream()) {
                    ByteArrayOutputStream out = new ByteArrayOutputStream();
                    in.transferTo(out);
                    got = out.toString(StandardCharsets.UTF_8);
                }
                check(status == 200 && got.equals(body), "HttpURLConnection " + prefix + " #" + i + ": " + status);
            }
        }
        System.exit(failed ? 1 : 0);
    }
}
