// An independent reproduction of Java Dubbo's ConsistentHashLoadBalance ring
// and AbstractLoadBalance.calculateWarmupWeight, written from their
// documented behaviour with the JDK's own MessageDigest, TreeMap and float
// arithmetic. cluster's tests run it (java DubboRing.java ...) to check the
// Go implementation against the JVM.
//
//   java DubboRing.java ring NODES ADDR[,ADDR...]   keys on stdin, one per line; prints the chosen address per key
//   java DubboRing.java warmup                     "uptime warmup weight" lines on stdin; prints the warm-up weight per line
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Map;
import java.util.TreeMap;

public class DubboRing {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        if (args[0].equals("ring")) {
            int replicaNumber = Integer.parseInt(args[1]);
            TreeMap<Long, String> ring = new TreeMap<>();
            for (String address : args[2].split(",")) {
                for (int i = 0; i < replicaNumber / 4; i++) {
                    byte[] digest = md5(address + i);
                    for (int h = 0; h < 4; h++) {
                        ring.put(hash(digest, h), address);
                    }
                }
            }
            for (String key; (key = in.readLine()) != null; ) {
                Map.Entry<Long, String> e = ring.ceilingEntry(hash(md5(key), 0));
                if (e == null) {
                    e = ring.firstEntry();
                }
                out.append(e.getValue()).append('\n');
            }
        } else if (args[0].equals("warmup")) {
            for (String line; (line = in.readLine()) != null; ) {
                String[] f = line.trim().split("\\s+");
                int uptime = Integer.parseInt(f[0]), warmup = Integer.parseInt(f[1]), weight = Integer.parseInt(f[2]);
                int ww = (int) (uptime / ((float) warmup / weight));
                out.append(ww < 1 ? 1 : Math.min(ww, weight)).append('\n');
            }
        } else {
            throw new IllegalArgumentException("unknown mode " + args[0]);
        }
        System.out.print(out);
    }

    static long hash(byte[] digest, int number) {
        return (((long) (digest[3 + number * 4] & 0xFF) << 24)
                | ((long) (digest[2 + number * 4] & 0xFF) << 16)
                | ((long) (digest[1 + number * 4] & 0xFF) << 8)
                | (digest[number * 4] & 0xFF))
                & 0xFFFFFFFFL;
    }

    static byte[] md5(String value) throws Exception {
        MessageDigest md5 = MessageDigest.getInstance("MD5");
        return md5.digest(value.getBytes(StandardCharsets.UTF_8));
    }
}
