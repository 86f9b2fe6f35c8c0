// Package protocol encodes and decodes the frames of the Dubbo protocol
// ("dubbo://" over TCP) with hessian2 bodies: the 16-byte header, request
// and response bodies, and the heartbeat and readonly events.
//
// It does no I/O beyond Reader, which cuts whole frames out of a stream and
// enforces the payload limit before a body is read. Encoding appends to a
// caller's buffer with a caller's reusable hessian.Encoder, so writing a
// request or a response allocates nothing once the buffers are warm.
// Decoding never panics: malformed input yields a *ProtocolError naming
// what was being read.
package protocol
