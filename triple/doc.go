// Package triple calls Dubbo 3 providers over Triple, Dubbo's
// gRPC-compatible protocol on HTTP/2 (h2c or TLS), without their JARs or
// IDL: non-IDL (Java interface) methods, whose hessian2 arguments and
// result travel in Triple's wrapper messages. It takes the dubbo
// client's Invocation and returns its Result, so a route's argument
// mapping and result conversion are the same for both protocols; see
// README.md.
package triple
