// A member of a share group on the Java client (KafkaShareConsumer), for tests/integration/test_kafka_share.py.
//
//   ShareMember config BOOTSTRAP GROUP KEY=VALUE...   set group configs (IncrementalAlterConfigs on the GROUP)
//   ShareMember consume BOOTSTRAP GROUP TOPIC STOP_FILE
//       consumes (implicit acknowledgement) until STOP_FILE exists; prints "ready" once subscribed, then
//       "record PARTITION OFFSET DELIVERY_COUNT VALUE" for every record, flushed at once.
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ShareMember {
  public static void main(String[] args) throws Exception {
    Properties props = new Properties();
    props.put("bootstrap.servers", args[1]);
    if (args[0].equals("config")) {
      List<AlterConfigOp> ops = new ArrayList<>();
      for (int i = 3; i < args.length; i++) {
        String[] pair = args[i].split("=", 2);
        ops.add(new AlterConfigOp(new ConfigEntry(pair[0], pair[1]), AlterConfigOp.OpType.SET));
      }
      ConfigResource group = new ConfigResource(ConfigResource.Type.GROUP, args[2]);
      try (Admin admin = Admin.create(props)) {
        Map<ConfigResource, Collection<AlterConfigOp>> change = Map.of(group, ops);
        admin.incrementalAlterConfigs(change).all().get();
      }
      System.out.println("configured");
      return;
    }
    props.put("group.id", args[2]);
    props.put("key.deserializer", ByteArrayDeserializer.class.getName());
    props.put("value.deserializer", ByteArrayDeserializer.class.getName());
    try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(props)) {
      consumer.subscribe(List.of(args[3]));
      System.out.println("ready");
      System.out.flush();
      while (!Files.exists(Paths.get(args[4]))) {
        ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
        for (ConsumerRecord<byte[], byte[]> record : records) {
          String value = new String(record.value(), StandardCharsets.UTF_8);
          short count = record.deliveryCount().orElse((short) 0);
          System.out.println("record " + record.partition() + " " + record.offset() + " " + count + " " + value);
        }
        System.out.flush();
        // Slower than our members on purpose, so that the records spread over all of them.
        if (!records.isEmpty()) {
          Thread.sleep(100);
        }
      }
    }
  }
}
