package interop;

import java.io.Serializable;

/** A graph node: shared references and cycles are built from it. */
public class Node implements Serializable {
  private static final long serialVersionUID = 1L;

  public String name;
  public Node next;
  public Object payload;

  public Node() {}
}
