import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Reads a topic from its beginning with the Java client at isolation.level=read_committed and prints each
 * record's value on a line of its own, then "done".
 *
 * Arguments: bootstrap servers, topic, the number of records to wait for. No group: the partitions are
 * assigned directly, so nothing waits for a rebalance. After the expected count it polls once more, so a
 * record that should not be there has its chance to show up.
 */
public final class ReadCommitted {
    public static void main(String[] args) {
        String bootstrap = args[0];
        String topic = args[1];
        int expect = Integer.parseInt(args[2]);
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("isolation.level", "read_committed");
        props.put("enable.auto.commit", "false");
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo info : consumer.partitionsFor(topic, Duration.ofSeconds(20))) {
                partitions.add(new TopicPartition(topic, info.partition()));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            int seen = 0;
            long deadline = System.currentTimeMillis() + 20_000;
            while (seen < expect && System.currentTimeMillis() < deadline) {
                seen += print(consumer, 200);
            }
            print(consumer, 1_000);
        }
        System.out.println("done");
    }

    private static int print(KafkaConsumer<String, String> consumer, long millis) {
        int count = 0;
        for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(millis))) {
            System.out.println(record.value());
            count++;
        }
        System.out.flush();
        return count;
    }
}
