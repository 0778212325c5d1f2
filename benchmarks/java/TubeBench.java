import java.lang.management.ManagementFactory;
import java.util.TreeSet;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.inlong.tubemq.client.config.ConsumerConfig;
import org.apache.inlong.tubemq.client.config.TubeClientConfig;
import org.apache.inlong.tubemq.client.consumer.ConsumePosition;
import org.apache.inlong.tubemq.client.consumer.ConsumerResult;
import org.apache.inlong.tubemq.client.consumer.PullMessageConsumer;
import org.apache.inlong.tubemq.client.factory.MessageSessionFactory;
import org.apache.inlong.tubemq.client.factory.TubeSingleSessionFactory;
import org.apache.inlong.tubemq.client.producer.MessageProducer;
import org.apache.inlong.tubemq.client.producer.MessageSentCallback;
import org.apache.inlong.tubemq.client.producer.MessageSentResult;
import org.apache.inlong.tubemq.corebase.Message;

// The Java TubeMQ client's side of benchmarks/tubemq_throughput.py.
//   produce MASTER TOPIC COUNT SIZE IN_FLIGHT   asynchronous sends, at most IN_FLIGHT outstanding
//   consume MASTER TOPIC GROUP COUNT            pull and confirm until COUNT messages arrived
// Prints "RESULT <phase> <messages> <seconds> <cpu seconds>" for the measured part only: from the first
// send (or the first message received) to the last acknowledgement (or the COUNT-th message).
public class TubeBench {
    public static void main(String[] args) throws Throwable {
        TubeClientConfig config = new TubeClientConfig(args[1]);
        MessageSessionFactory factory = new TubeSingleSessionFactory(config);
        try {
            if (args[0].equals("produce")) {
                produce(factory, args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]),
                        Integer.parseInt(args[5]));
            } else {
                consume(factory, args[1], args[2], args[3], Integer.parseInt(args[4]));
            }
        } finally {
            factory.shutdown();
        }
    }

    static double cpuSeconds() {
        java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        return ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime() / 1e9;
    }

    static void produce(MessageSessionFactory factory, String topic, int count, int size, int inFlight)
            throws Throwable {
        MessageProducer producer = factory.createProducer();
        producer.publish(topic);
        byte[] data = new byte[size];
        java.util.Arrays.fill(data, (byte) 'x');
        Semaphore slots = new Semaphore(inFlight);
        AtomicLong failed = new AtomicLong();
        AtomicReference<String> firstError = new AtomicReference<>();
        MessageSentCallback callback = new MessageSentCallback() {
            @Override
            public void onMessageSent(MessageSentResult result) {
                if (!result.isSuccess()) {
                    failed.incrementAndGet();
                    firstError.compareAndSet(null, result.getErrCode() + " " + result.getErrMsg());
                }
                slots.release();
            }

            @Override
            public void onException(Throwable e) {
                failed.incrementAndGet();
                firstError.compareAndSet(null, String.valueOf(e));
                slots.release();
            }
        };
        // One synchronous send first: connections and partition metadata are ready before timing starts.
        MessageSentResult first = producer.sendMessage(new Message(topic, data));
        if (!first.isSuccess()) {
            throw new IllegalStateException("send failed: " + first.getErrCode() + " " + first.getErrMsg());
        }
        double cpu = cpuSeconds();
        long start = System.nanoTime();
        for (int i = 0; i < count; i++) {
            slots.acquire();
            producer.sendMessage(new Message(topic, data), callback);
        }
        slots.acquire(inFlight);
        double seconds = (System.nanoTime() - start) / 1e9;
        cpu = cpuSeconds() - cpu;
        producer.shutdown();
        if (failed.get() > 0) {
            throw new IllegalStateException(failed.get() + " sends failed, the first with " + firstError.get());
        }
        System.out.println("RESULT produce " + count + " " + seconds + " " + cpu);
    }

    static void consume(MessageSessionFactory factory, String master, String topic, String group, int count)
            throws Throwable {
        ConsumerConfig config = new ConsumerConfig(master, group);
        config.setConsumePosition(ConsumePosition.CONSUMER_FROM_FIRST_OFFSET);
        config.setMsgNotFoundWaitPeriodMs(10);
        PullMessageConsumer consumer = factory.createPullConsumer(config);
        consumer.subscribe(topic, (TreeSet<String>) null);
        consumer.completeSubscribe();
        long deadline = System.currentTimeMillis() + 600_000L;
        int got = 0;
        long start = 0;
        double cpu = 0;
        while (got < count && System.currentTimeMillis() < deadline) {
            ConsumerResult result = consumer.getMessage();
            if (!result.isSuccess()) {
                Thread.sleep(1);
                continue;
            }
            if (start == 0) {
                start = System.nanoTime();
                cpu = cpuSeconds();
            }
            got += result.getMessageList().size();
            consumer.confirmConsume(result.getConfirmContext(), true);
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        cpu = cpuSeconds() - cpu;
        consumer.shutdown();
        if (got < count) {
            throw new IllegalStateException("only " + got + " of " + count + " messages arrived");
        }
        System.out.println("RESULT consume " + got + " " + seconds + " " + cpu);
    }
}
