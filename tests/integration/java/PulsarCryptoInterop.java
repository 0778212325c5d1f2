// The Java client's side of the end-to-end encryption interop tests: compiled at test time against the broker's
// class path.
//   produce URL TOPIC KEYNAME PUBLIC_PEM COUNT       -- send COUNT messages "java-i", encrypted for KEYNAME
//   consume URL TOPIC SUBSCRIPTION PRIVATE_PEM COUNT -- print "MSG <value>" for COUNT messages, decrypted
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.CryptoKeyReader;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.impl.DefaultCryptoKeyReader;

public class PulsarCryptoInterop {
    public static void main(String[] args) throws Exception {
        try (PulsarClient client = PulsarClient.builder().serviceUrl(args[1]).build()) {
            if (args[0].equals("produce")) {
                CryptoKeyReader keys = DefaultCryptoKeyReader.builder().defaultPublicKey("file://" + args[4]).build();
                try (Producer<byte[]> producer = client.newProducer().topic(args[2]).addEncryptionKey(args[3])
                        .cryptoKeyReader(keys).create()) {
                    int count = Integer.parseInt(args[5]);
                    for (int i = 0; i < count; i++) {
                        producer.sendAsync(("java-" + i).getBytes(StandardCharsets.UTF_8));
                    }
                    producer.flush();
                }
                System.out.println("DONE");
            } else {
                CryptoKeyReader keys = DefaultCryptoKeyReader.builder().defaultPrivateKey("file://" + args[4]).build();
                try (Consumer<byte[]> consumer = client.newConsumer().topic(args[2]).subscriptionName(args[3])
                        .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).cryptoKeyReader(keys)
                        .subscribe()) {
                    int count = Integer.parseInt(args[5]);
                    for (int i = 0; i < count; i++) {
                        Message<byte[]> message = consumer.receive(60, TimeUnit.SECONDS);
                        if (message == null) {
                            break;
                        }
                        System.out.println("MSG " + new String(message.getValue(), StandardCharsets.UTF_8));
                        consumer.acknowledge(message);
                    }
                }
            }
        }
    }
}
