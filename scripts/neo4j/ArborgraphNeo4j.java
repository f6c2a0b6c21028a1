import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.neo4j.configuration.GraphDatabaseInternalSettings;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.harness.Neo4j;
import org.neo4j.harness.Neo4jBuilder;
import org.neo4j.harness.Neo4jBuilders;

/**
 * A real Neo4j (the in-process server Neo4j publishes for tests) with Bolt on a loopback
 * port, authentication on, and GDS loaded from a plugin directory. Started by
 * scripts/neo4j-server, which reads the Bolt URI from the file given as --uri-file once
 * the server answers; stopped by SIGTERM (the shutdown hook closes the database cleanly).
 *
 * Arguments: --work DIR --port P (0: a free one) --plugins DIR --uri-file FILE
 * [--from HOME] (start on a copy of HOME, e.g. a store neo4j-admin imported into).
 * The password of user neo4j is $NEO4J_PASSWORD, else "arborgraph".
 */
public final class ArborgraphNeo4j {
    private ArborgraphNeo4j() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = options(args);
        Path work = Path.of(required(opts, "--work"));
        Path plugins = Path.of(required(opts, "--plugins"));
        Path uriFile = Path.of(required(opts, "--uri-file"));
        int port = Integer.parseInt(opts.getOrDefault("--port", "7687"));
        String password = System.getenv().getOrDefault("NEO4J_PASSWORD", "arborgraph");
        if (port == 0) {
            port = freePort();
        }
        Neo4jBuilder builder = Neo4jBuilders.newInProcessBuilder(work)
                .withDisabledServer() // no HTTP: Bolt only
                .withConfig(BoltConnector.enabled, true)
                .withConfig(BoltConnector.listen_address, new SocketAddress("127.0.0.1", port))
                .withConfig(GraphDatabaseSettings.auth_enabled, true)
                // tests try wrong passwords: that must not lock the user out of later tests
                .withConfig(GraphDatabaseSettings.auth_max_failed_attempts, 0)
                .withConfig(GraphDatabaseSettings.plugin_dir, plugins)
                .withConfig(GraphDatabaseSettings.procedure_unrestricted, List.of("gds.*"))
                .withConfig(GraphDatabaseSettings.pagecache_memory, 256L * 1024 * 1024)
                // a test server: stopping need not wait for transactions a client left open
                .withConfig(GraphDatabaseSettings.shutdown_transaction_end_timeout, Duration.ofSeconds(1))
                .withConfig(GraphDatabaseInternalSettings.netty_server_shutdown_quiet_period, 0)
                .withConfig(GraphDatabaseInternalSettings.netty_server_shutdown_timeout, Duration.ofSeconds(2));
        if (opts.containsKey("--from")) {
            builder = builder.copyFrom(Path.of(opts.get("--from")));
        }
        Neo4j neo4j = builder.build();
        // the embedded API runs as no user: it may set the password the clients will need
        neo4j.databaseManagementService()
                .database("system")
                .executeTransactionally(
                        "ALTER USER neo4j SET PASSWORD $password CHANGE NOT REQUIRED", Map.of("password", password));
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            long t0 = System.nanoTime();
            neo4j.close();
            System.out.println("closed in " + (System.nanoTime() - t0) / 1000000 + " ms");
            stopped.countDown();
        }));
        writeAtomically(uriFile, "bolt://127.0.0.1:" + port + "\n");
        System.out.println("bolt://127.0.0.1:" + port);
        stopped.await();
    }

    private static Map<String, String> options(String[] args) {
        if (args.length % 2 != 0) {
            throw new IllegalArgumentException("options come in pairs: --name value");
        }
        Map<String, String> out = new HashMap<>();
        for (int i = 0; i < args.length; i += 2) {
            out.put(args[i], args[i + 1]);
        }
        return out;
    }

    private static String required(Map<String, String> opts, String name) {
        String value = opts.get(name);
        if (value == null) {
            throw new IllegalArgumentException("missing " + name);
        }
        return value;
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    private static void writeAtomically(Path file, String text) throws IOException {
        Path partial = file.resolveSibling(file.getFileName() + ".partial");
        Files.writeString(partial, text, StandardCharsets.UTF_8);
        Files.move(partial, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }
}
