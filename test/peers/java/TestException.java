package interop;

/** The checked exception the interop tests send, with or without a cause. */
public class TestException extends Exception {
  private static final long serialVersionUID = 1L;

  /** No cause given: Throwable keeps cause == this, which Hessian writes as a reference to itself. */
  public TestException(String message) {
    super(message);
  }

  public TestException(String message, Throwable cause) {
    super(message, cause);
  }
}
