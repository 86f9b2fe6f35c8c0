package interop;

import java.io.Serializable;

/** The five-field object the interop tests and benchmarks share. */
public class Pojo implements Serializable {
  private static final long serialVersionUID = 1L;

  public long id;
  public String name;
  public int age;
  public boolean active;
  public double score;

  public Pojo() {}
}
