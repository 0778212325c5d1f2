// The Java client's side of the transaction interop tests: compiled at test time against the broker's class path.
//   produce URL TOPIC PREFIX COUNT commit|abort  -- send COUNT messages PREFIX-i in one transaction, then end it
//   consume URL TOPIC SUBSCRIPTION COUNT SECONDS  -- print "MSG <value>" for each message received, acking each
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.transaction.Transaction;

public class PulsarTxnInterop {
    public static void main(String[] args) throws Exception {
        try (PulsarClient client = PulsarClient.builder().serviceUrl(args[1]).enableTransaction(true).build()) {
            if (args[0].equals("produce")) {
                produce(client, args[2], args[3], Integer.parseInt(args[4]), args[5].equals("commit"));
            } else {
                consume(client, args[2], args[3], Integer.parseInt(args[4]), Integer.parseInt(args[5]));
            }
        }
    }

    static void produce(PulsarClient client, String topic, String prefix, int count, boolean commit) throws Exception {
        // Transactional sends need the send timeout off.
        try (Producer<byte[]> producer = client.newProducer().topic(topic).sendTimeout(0, TimeUnit.SECONDS).create()) {
            Transaction txn = client.newTransaction().withTransactionTimeout(60, TimeUnit.SECONDS).build().get();
            CompletableFuture<?>[] sent = new CompletableFuture<?>[count];
            for (int i = 0; i < count; i++) {
                sent[i] = producer.newMessage(txn).value((prefix + "-" + i).getBytes(StandardCharsets.UTF_8)).sendAsync();
            }
            CompletableFuture.allOf(sent).get();
            if (commit) {
                txn.commit().get();
            } else {
                txn.abort().get();
            }
            System.out.println("DONE " + txn.getTxnID());
        }
    }

    static void consume(PulsarClient client, String topic, String subscription, int count, int seconds)
            throws Exception {
        try (Consumer<byte[]> consumer = client.newConsumer().topic(topic).subscriptionName(subscription)
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe()) {
            long deadline = System.currentTimeMillis() + seconds * 1000L;
            int received = 0;
            // After COUNT messages, one more second shows that nothing else (an aborted message) comes.
            while (System.currentTimeMillis() < deadline) {
                Message<byte[]> message = consumer.receive(1, TimeUnit.SECONDS);
                if (message == null) {
                    if (received >= count) {
                        break;
                    }
                    continue;
                }
                System.out.println("MSG " + new String(message.getValue(), StandardCharsets.UTF_8));
                consumer.acknowledge(message);
                received++;
            }
        }
    }
}
