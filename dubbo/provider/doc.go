// Package provider is an in-process Dubbo provider: a real TCP server
// speaking the dubbo protocol with hessian2, and Triple (ServeTriple:
// unary non-IDL calls on h2c), serving Go functions registered as Java
// services. The quickstart's demo service (package demo) and the tests'
// providers run on it.
//
// It behaves as a Java provider does where a consumer can tell: heartbeats
// are answered, calls run concurrently up to a bound beyond which they are
// refused with SERVER_THREADPOOL_EXHAUSTED_ERROR, an unknown service is
// SERVICE_NOT_FOUND, an unknown method or a failing one is an exception
// response, generic calls ($invoke) take and return maps with a "class"
// key, responses carry attachments when the consumer's dubbo version asks
// for them, and Close sends the readonly event before draining.
package provider
