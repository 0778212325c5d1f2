import java.io.File;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.apache.inlong.tubemq.client.config.TubeClientConfig;
import org.apache.inlong.tubemq.client.factory.MessageSessionFactory;
import org.apache.inlong.tubemq.client.factory.TubeSingleSessionFactory;
import org.apache.inlong.tubemq.client.producer.MessageProducer;
import org.apache.inlong.tubemq.client.producer.MessageSentCallback;
import org.apache.inlong.tubemq.client.producer.MessageSentResult;
import org.apache.inlong.tubemq.corebase.Message;

// The TubeMQ Java client's producer for tests/cluster/test_tubemq_cluster.py: sends RATE messages a second
// to TOPIC until the file STOP exists, then waits for every outcome.
//   java TubeFailoverProducer MASTERS TOPIC RATE STOP
// Prints "ACK <epoch ms>" for each acknowledged send, "FAIL <reason>" for each failed one, and at the end
// "DONE <n>": n sends whose outcome never came within a minute after the last send.
public class TubeFailoverProducer {
    static final int IN_FLIGHT = 1000;

    public static void main(String[] args) throws Throwable {
        String topic = args[1];
        int rate = Integer.parseInt(args[2]);
        File stop = new File(args[3]);
        MessageSessionFactory factory = new TubeSingleSessionFactory(new TubeClientConfig(args[0]));
        MessageProducer producer = factory.createProducer();
        producer.publish(topic);
        Semaphore slots = new Semaphore(IN_FLIGHT);
        MessageSentCallback callback = new MessageSentCallback() {
            @Override
            public void onMessageSent(MessageSentResult result) {
                out(result.isSuccess() ? "ACK " + System.currentTimeMillis() : "FAIL " + result.getErrCode());
                slots.release();
            }

            @Override
            public void onException(Throwable e) {
                out("FAIL " + e.getClass().getSimpleName());
                slots.release();
            }
        };
        long start = System.nanoTime();
        long sent = 0;
        while (!stop.exists()) {
            slots.acquire();
            try {
                producer.sendMessage(new Message(topic, ("ref-" + sent).getBytes()), callback);
            } catch (Throwable e) {
                out("FAIL " + e.getClass().getSimpleName());
                slots.release();
            }
            sent++;
            long ahead = sent * 1_000_000_000L / rate - (System.nanoTime() - start);
            if (ahead > 0) {
                Thread.sleep(ahead / 1_000_000, (int) (ahead % 1_000_000));
            }
        }
        // Every outcome, or a minute for the ones still out; DONE names how many never came.
        int answered = 0;
        long until = System.nanoTime() + 60_000_000_000L;
        while (answered < IN_FLIGHT && System.nanoTime() < until) {
            if (slots.tryAcquire(100, TimeUnit.MILLISECONDS)) {
                answered++;
            }
        }
        out("DONE " + (IN_FLIGHT - answered));
        // The factory's shutdown can wait on a broker that is gone; the outcomes are all printed.
        System.exit(0);
    }

    static synchronized void out(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
