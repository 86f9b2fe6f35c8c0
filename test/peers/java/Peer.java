package interop;

import com.caucho.hessian.io.Hessian2Input;
import com.caucho.hessian.io.Hessian2Output;
import com.caucho.hessian.io.SerializerFactory;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.Array;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.Date;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A Hessian 2.0 peer backed by Caucho's Hessian2Output/Hessian2Input, driven by the Go interop tests.
 *
 * <p>Each stdin line is one JSON request, each stdout line the JSON answer to it, in order:
 *
 * <pre>
 *   {"op":"encode","desc":DESC}  ->  {"hex":"..."}   builds the Java value DESC describes, writes it
 *   {"op":"decode","hex":"..."}  ->  {"desc":DESC}    reads one value and describes the Java object graph
 *   any failure                  ->  {"error":"..."}
 * </pre>
 *
 * DESC is the typed JSON of test/peers/README.md.
 */
public final class Peer {
  private final SerializerFactory factory = new SerializerFactory();

  public static void main(String[] args) throws Exception {
    Peer peer = new Peer();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    PrintWriter out = new PrintWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), false);
    String line;
    while ((line = in.readLine()) != null) {
      if (line.isEmpty()) {
        continue;
      }
      out.println(peer.handle(line));
    }
    out.flush();
  }

  String handle(String line) {
    Map<String, Object> answer = new LinkedHashMap<>();
    try {
      Map<String, Object> req = asMap(Json.parse(line));
      String op = (String) req.get("op");
      if ("encode".equals(op)) {
        answer.put("hex", hex(encode(new Builder().build(req.get("desc")))));
      } else if ("decode".equals(op)) {
        answer.put("desc", new Describer().describe(decode(unhex((String) req.get("hex")))));
      } else {
        throw new IllegalArgumentException("unknown op " + op);
      }
    } catch (Throwable e) {
      StringWriter w = new StringWriter();
      e.printStackTrace(new PrintWriter(w));
      answer.clear();
      answer.put("error", w.toString());
    }
    return Json.write(answer);
  }

  byte[] encode(Object value) throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    Hessian2Output out = new Hessian2Output(bytes);
    out.setSerializerFactory(factory);
    out.writeObject(value);
    out.close();
    return bytes.toByteArray();
  }

  Object decode(byte[] data) throws Exception {
    Hessian2Input in = new Hessian2Input(new ByteArrayInputStream(data));
    in.setSerializerFactory(factory);
    Object value = in.readObject();
    in.close();
    return value;
  }

  /** Builds the Java object graph a description names; "id" and "ref" make shared references. */
  static final class Builder {
    private final Map<String, Object> ids = new HashMap<>();

    Object build(Object node) throws Exception {
      Map<String, Object> d = asMap(node);
      String t = (String) d.get("t");
      switch (t) {
        case "null":
          return null;
        case "bool":
          return (Boolean) d.get("v");
        case "int":
          return ((Number) d.get("v")).intValue();
        case "long":
          return Long.parseLong((String) d.get("v"));
        case "double":
          return toDouble(d.get("v"));
        case "date":
          return new Date(((Number) d.get("v")).longValue());
        case "string":
          return (String) d.get("v");
        case "binary":
          return Base64.getDecoder().decode((String) d.get("v"));
        case "bigdecimal":
          return new BigDecimal((String) d.get("v"));
        case "biginteger":
          return new BigInteger((String) d.get("v"));
        case "enum":
          {
            Object e = enumValue(Class.forName((String) d.get("class")), (String) d.get("name"));
            remember(d, e);
            return e;
          }
        case "exception":
          return exception(d);
        case "ref":
          {
            String id = (String) d.get("id");
            if (!ids.containsKey(id)) {
              throw new IllegalArgumentException("ref to unknown id " + id);
            }
            return ids.get(id);
          }
        case "list":
          return list(d);
        case "map":
          return map(d);
        case "object":
          return object(d);
        default:
          throw new IllegalArgumentException("unknown description type " + t);
      }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static Object enumValue(Class<?> cl, String name) {
      return Enum.valueOf((Class) cl, name);
    }

    private Throwable exception(Map<String, Object> d) throws Exception {
      Class<?> cl = Class.forName((String) d.get("class"));
      String message = (String) d.get("message");
      Object causeDesc = d.get("cause");
      Throwable e;
      if (causeDesc == null) {
        e = (Throwable) cl.getConstructor(String.class).newInstance(message);
      } else {
        Throwable cause = (Throwable) build(causeDesc);
        e = (Throwable) cl.getConstructor(String.class, Throwable.class).newInstance(message, cause);
      }
      // Every peer gives an exception this one frame (test/peers/README.md): the bytes stay
      // deterministic and still carry a real StackTraceElement array, as a Java service's do.
      e.setStackTrace(
          new StackTraceElement[] {new StackTraceElement("interop.Service", "call", "Service.java", 42)});
      return e;
    }

    private void remember(Map<String, Object> d, Object value) {
      Object id = d.get("id");
      if (id != null) {
        ids.put((String) id, value);
      }
    }

    private Object list(Map<String, Object> d) throws Exception {
      String type = d.containsKey("type") ? (String) d.get("type") : "";
      List<Object> items = asList(d.get("items"));
      boolean variable = Boolean.TRUE.equals(d.get("variable"));
      if (type.startsWith("[")) {
        Class<?> component = componentClass(type.substring(1));
        Object array = Array.newInstance(component, items.size());
        remember(d, array);
        for (int i = 0; i < items.size(); i++) {
          Array.set(array, i, build(items.get(i)));
        }
        return array;
      }
      Collection<Object> list;
      if (type.isEmpty()) {
        list = new ArrayList<>();
      } else {
        @SuppressWarnings("unchecked")
        Collection<Object> c =
            (Collection<Object>) Class.forName(type).getDeclaredConstructor().newInstance();
        list = c;
      }
      remember(d, list);
      for (Object item : items) {
        list.add(build(item));
      }
      // Caucho writes an Iterator as a variable-length list (x57 ... Z).
      return variable ? list.iterator() : list;
    }

    private Object map(Map<String, Object> d) throws Exception {
      String type = d.containsKey("type") ? (String) d.get("type") : "";
      Map<Object, Object> map;
      if (type.isEmpty()) {
        map = new HashMap<>();
      } else {
        @SuppressWarnings("unchecked")
        Map<Object, Object> m = (Map<Object, Object>) Class.forName(type).getDeclaredConstructor().newInstance();
        map = m;
      }
      remember(d, map);
      for (Object entry : asList(d.get("entries"))) {
        List<Object> kv = asList(entry);
        map.put(build(kv.get(0)), build(kv.get(1)));
      }
      return map;
    }

    private Object object(Map<String, Object> d) throws Exception {
      Class<?> cl = Class.forName((String) d.get("class"));
      Constructor<?> ctor = cl.getDeclaredConstructor();
      ctor.setAccessible(true);
      Object o = ctor.newInstance();
      remember(d, o);
      for (Object pair : asList(d.get("fields"))) {
        List<Object> nv = asList(pair);
        Field f = field(cl, (String) nv.get(0));
        f.set(o, build(nv.get(1)));
      }
      return o;
    }

    private static Class<?> componentClass(String name) throws ClassNotFoundException {
      switch (name) {
        case "int":
          return int.class;
        case "long":
          return long.class;
        case "double":
          return double.class;
        case "boolean":
          return boolean.class;
        case "short":
          return short.class;
        case "float":
          return float.class;
        case "string":
          return String.class;
        case "object":
          return Object.class;
        default:
          return Class.forName(name);
      }
    }
  }

  static Field field(Class<?> cl, String name) throws NoSuchFieldException {
    for (Class<?> c = cl; c != null; c = c.getSuperclass()) {
      try {
        Field f = c.getDeclaredField(name);
        f.setAccessible(true);
        return f;
      } catch (NoSuchFieldException e) {
        // look in the superclass
      }
    }
    throw new NoSuchFieldException(cl.getName() + "." + name);
  }

  /**
   * Describes a decoded Java object graph. Every container gets an "id" on first sight and is a
   * "ref" after that; the Go side drops the ids nobody refers to.
   */
  static final class Describer {
    private final IdentityHashMap<Object, String> seen = new IdentityHashMap<>();

    Map<String, Object> describe(Object o) throws Exception {
      Map<String, Object> d = new LinkedHashMap<>();
      if (o == null) {
        d.put("t", "null");
        return d;
      }
      if (seen.containsKey(o)) {
        d.put("t", "ref");
        d.put("id", seen.get(o));
        return d;
      }
      if (o instanceof Boolean) {
        d.put("t", "bool");
        d.put("v", o);
      } else if (o instanceof Integer || o instanceof Short || o instanceof Byte) {
        d.put("t", "int");
        d.put("v", ((Number) o).longValue());
      } else if (o instanceof Long) {
        d.put("t", "long");
        d.put("v", o.toString());
      } else if (o instanceof Double || o instanceof Float) {
        d.put("t", "double");
        d.put("v", doubleJson(((Number) o).doubleValue()));
      } else if (o instanceof Date) {
        d.put("t", "date");
        d.put("v", ((Date) o).getTime());
      } else if (o instanceof String) {
        d.put("t", "string");
        d.put("v", o);
      } else if (o instanceof byte[]) {
        d.put("t", "binary");
        d.put("v", Base64.getEncoder().encodeToString((byte[]) o));
      } else if (o instanceof BigDecimal) {
        d.put("t", "bigdecimal");
        d.put("v", ((BigDecimal) o).toPlainString());
      } else if (o instanceof BigInteger) {
        d.put("t", "biginteger");
        d.put("v", o.toString());
      } else if (o instanceof Enum) {
        d.put("t", "enum");
        d.put("class", ((Enum<?>) o).getDeclaringClass().getName());
        d.put("name", ((Enum<?>) o).name());
      } else if (o instanceof Throwable) {
        Throwable e = (Throwable) o;
        seen.put(o, id());
        d.put("t", "exception");
        d.put("class", e.getClass().getName());
        d.put("message", e.getMessage());
        // getCause() answers null both for "no cause" and for the cause == this convention.
        d.put("cause", e.getCause() == null ? null : describe(e.getCause()));
      } else if (o.getClass().isArray()) {
        d.put("t", "list");
        d.put("id", remember(o));
        d.put("type", arrayType(o.getClass().getComponentType()));
        List<Object> items = new ArrayList<>();
        for (int i = 0; i < Array.getLength(o); i++) {
          items.add(describe(Array.get(o, i)));
        }
        d.put("items", items);
      } else if (o instanceof Collection) {
        d.put("t", "list");
        d.put("id", remember(o));
        d.put("type", o.getClass().getName());
        List<Object> items = new ArrayList<>();
        for (Object item : (Collection<?>) o) {
          items.add(describe(item));
        }
        d.put("items", items);
      } else if (o instanceof Map) {
        d.put("t", "map");
        d.put("id", remember(o));
        d.put("type", o.getClass().getName());
        List<Object> entries = new ArrayList<>();
        for (Map.Entry<?, ?> e : ((Map<?, ?>) o).entrySet()) {
          List<Object> kv = new ArrayList<>();
          kv.add(describe(e.getKey()));
          kv.add(describe(e.getValue()));
          entries.add(kv);
        }
        d.put("entries", entries);
      } else {
        d.put("t", "object");
        d.put("id", remember(o));
        d.put("class", o.getClass().getName());
        List<Object> fields = new ArrayList<>();
        for (Field f : o.getClass().getDeclaredFields()) {
          if (Modifier.isStatic(f.getModifiers()) || Modifier.isTransient(f.getModifiers())) {
            continue;
          }
          f.setAccessible(true);
          List<Object> nv = new ArrayList<>();
          nv.add(f.getName());
          nv.add(describe(f.get(o)));
          fields.add(nv);
        }
        d.put("fields", fields);
      }
      return d;
    }

    private String id() {
      return "j" + seen.size();
    }

    private String remember(Object o) {
      String id = id();
      seen.put(o, id);
      return id;
    }

    private static String arrayType(Class<?> component) {
      if (component == String.class) {
        return "[string";
      }
      if (component == Object.class) {
        return "[object";
      }
      return "[" + component.getName();
    }
  }

  static Object doubleJson(double v) {
    if (Double.isNaN(v)) {
      return "NaN";
    }
    if (Double.isInfinite(v)) {
      return v > 0 ? "Infinity" : "-Infinity";
    }
    return v;
  }

  static double toDouble(Object v) {
    if (v instanceof String) {
      switch ((String) v) {
        case "NaN":
          return Double.NaN;
        case "Infinity":
          return Double.POSITIVE_INFINITY;
        case "-Infinity":
          return Double.NEGATIVE_INFINITY;
        default:
          return Double.parseDouble((String) v);
      }
    }
    return ((Number) v).doubleValue();
  }

  @SuppressWarnings("unchecked")
  static Map<String, Object> asMap(Object o) {
    if (!(o instanceof Map)) {
      throw new IllegalArgumentException("want a JSON object, got " + o);
    }
    return (Map<String, Object>) o;
  }

  @SuppressWarnings("unchecked")
  static List<Object> asList(Object o) {
    if (!(o instanceof List)) {
      throw new IllegalArgumentException("want a JSON array, got " + o);
    }
    return (List<Object>) o;
  }

  static String hex(byte[] b) {
    StringBuilder s = new StringBuilder(b.length * 2);
    for (byte x : b) {
      s.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
    }
    return s.toString();
  }

  static byte[] unhex(String s) {
    byte[] b = new byte[s.length() / 2];
    for (int i = 0; i < b.length; i++) {
      b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
    }
    return b;
  }

  /** Just enough JSON for the protocol: objects keep key order, integers stay exact. */
  static final class Json {
    private final String s;
    private int i;

    private Json(String s) {
      this.s = s;
    }

    static Object parse(String s) {
      Json j = new Json(s);
      Object v = j.value();
      j.space();
      if (j.i != s.length()) {
        throw new IllegalArgumentException("trailing data at " + j.i);
      }
      return v;
    }

    private void space() {
      while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
        i++;
      }
    }

    private Object value() {
      space();
      char c = s.charAt(i);
      switch (c) {
        case '{':
          {
            i++;
            Map<String, Object> m = new LinkedHashMap<>();
            space();
            if (s.charAt(i) == '}') {
              i++;
              return m;
            }
            while (true) {
              space();
              String k = string();
              space();
              expect(':');
              m.put(k, value());
              space();
              if (s.charAt(i) == ',') {
                i++;
                continue;
              }
              expect('}');
              return m;
            }
          }
        case '[':
          {
            i++;
            List<Object> l = new ArrayList<>();
            space();
            if (s.charAt(i) == ']') {
              i++;
              return l;
            }
            while (true) {
              l.add(value());
              space();
              if (s.charAt(i) == ',') {
                i++;
                continue;
              }
              expect(']');
              return l;
            }
          }
        case '"':
          return string();
        case 't':
          i += 4;
          return Boolean.TRUE;
        case 'f':
          i += 5;
          return Boolean.FALSE;
        case 'n':
          i += 4;
          return null;
        default:
          return number();
      }
    }

    private void expect(char c) {
      if (s.charAt(i) != c) {
        throw new IllegalArgumentException("want '" + c + "' at " + i);
      }
      i++;
    }

    private Object number() {
      int start = i;
      while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
        i++;
      }
      String n = s.substring(start, i);
      if (n.indexOf('.') < 0 && n.indexOf('e') < 0 && n.indexOf('E') < 0) {
        return Long.parseLong(n);
      }
      return Double.parseDouble(n);
    }

    private String string() {
      expect('"');
      StringBuilder b = new StringBuilder();
      while (true) {
        char c = s.charAt(i++);
        if (c == '"') {
          return b.toString();
        }
        if (c != '\\') {
          b.append(c);
          continue;
        }
        char e = s.charAt(i++);
        switch (e) {
          case 'u':
            b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
            i += 4;
            break;
          case 'n':
            b.append('\n');
            break;
          case 't':
            b.append('\t');
            break;
          case 'r':
            b.append('\r');
            break;
          case 'b':
            b.append('\b');
            break;
          case 'f':
            b.append('\f');
            break;
          default:
            b.append(e);
        }
      }
    }

    static String write(Object v) {
      StringBuilder b = new StringBuilder();
      write(b, v);
      return b.toString();
    }

    private static void write(StringBuilder b, Object v) {
      if (v == null) {
        b.append("null");
      } else if (v instanceof String) {
        quote(b, (String) v);
      } else if (v instanceof Boolean || v instanceof Long || v instanceof Integer) {
        b.append(v);
      } else if (v instanceof Double) {
        b.append(v);
      } else if (v instanceof Map) {
        b.append('{');
        boolean first = true;
        for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
          if (!first) {
            b.append(',');
          }
          first = false;
          quote(b, (String) e.getKey());
          b.append(':');
          write(b, e.getValue());
        }
        b.append('}');
      } else if (v instanceof List) {
        b.append('[');
        boolean first = true;
        for (Object x : (List<?>) v) {
          if (!first) {
            b.append(',');
          }
          first = false;
          write(b, x);
        }
        b.append(']');
      } else {
        throw new IllegalArgumentException("cannot write " + v.getClass() + " as JSON");
      }
    }

    private static void quote(StringBuilder b, String s) {
      b.append('"');
      for (int k = 0; k < s.length(); k++) {
        char c = s.charAt(k);
        if (c == '"' || c == '\\') {
          b.append('\\').append(c);
        } else if (c < 0x20) {
          b.append(String.format("\\u%04x", (int) c));
        } else {
          b.append(c);
        }
      }
      b.append('"');
    }
  }
}
