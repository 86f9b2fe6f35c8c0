package interop;

/** The enum the interop tests send: Hessian writes it as an object whose one field is its name. */
public enum Color {
  RED,
  GREEN,
  BLUE
}
