// A broker metrics reporter that takes the client telemetry (KIP-714) clients push and writes each payload to
// the file named by the broker property mqwire.telemetry.file, one line per push:
//   <client instance id> <client id> <terminating> <content type> <payload, base64>
// Also run as a program: `subscribe <bootstrap> <name> <interval.ms> <metrics> <match>` sets a client-metrics
// subscription through the Java admin client (IncrementalAlterConfigs on a CLIENT_METRICS resource).

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.Base64;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.server.telemetry.ClientTelemetry;
import org.apache.kafka.server.telemetry.ClientTelemetryReceiver;

@SuppressWarnings({"deprecation", "removal"})
public class TelemetryFileReporter implements MetricsReporter, ClientTelemetry {
    private Path out;

    @Override
    public void configure(Map<String, ?> configs) {
        Object file = configs.get("mqwire.telemetry.file");
        if (file == null) {
            throw new IllegalArgumentException("mqwire.telemetry.file is not set");
        }
        out = Paths.get(file.toString());
    }

    @Override
    public void init(List<KafkaMetric> metrics) {
    }

    @Override
    public void metricChange(KafkaMetric metric) {
    }

    @Override
    public void metricRemoval(KafkaMetric metric) {
    }

    @Override
    public void close() {
    }

    @Override
    public ClientTelemetryReceiver clientReceiver() {
        return (context, payload) -> {
            ByteBuffer data = payload.data().duplicate();
            byte[] bytes = new byte[data.remaining()];
            data.get(bytes);
            String line = payload.clientInstanceId() + " " + context.clientId() + " " + payload.isTerminating() + " "
                + payload.contentType() + " " + Base64.getEncoder().encodeToString(bytes) + "\n";
            synchronized (TelemetryFileReporter.class) {
                try {
                    Files.write(out, line.getBytes(StandardCharsets.UTF_8), StandardOpenOption.CREATE,
                        StandardOpenOption.APPEND);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
        };
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 6 || !args[0].equals("subscribe")) {
            System.err.println("usage: subscribe <bootstrap> <name> <interval.ms> <metrics> <match>");
            System.exit(2);
        }
        try (Admin admin = Admin.create(Map.<String, Object>of("bootstrap.servers", args[1]))) {
            ConfigResource resource = new ConfigResource(ConfigResource.Type.CLIENT_METRICS, args[2]);
            List<AlterConfigOp> ops = List.of(
                new AlterConfigOp(new ConfigEntry("interval.ms", args[3]), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("metrics", args[4]), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("match", args[5]), AlterConfigOp.OpType.SET));
            admin.incrementalAlterConfigs(Map.of(resource, ops)).all().get();
        }
        System.out.println("subscribed");
    }
}
