package provider

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dubbogw/dubbogw/dubbo/protocol"
	"github.com/dubbogw/dubbogw/hessian"
	"github.com/dubbogw/dubbogw/internal/grpcwire"
	"github.com/dubbogw/dubbogw/internal/triplewire"
)

// This file serves the registered services over Triple, Dubbo 3's
// gRPC-compatible protocol, as Java Dubbo 3 serves a non-IDL interface:
// unary calls on HTTP/2 (h2c, prior knowledge) at /<interface>/<method>,
// the arguments and the result in the wrapper messages of
// internal/triplewire, one hessian2 stream each.
//
// Answers map as Java's do: the method's exception is UNKNOWN with
// "class: message", an unknown service or method UNIMPLEMENTED (a client
// may then try the method name's other spelling), a call beyond
// SetMaxInFlight RESOURCE_EXHAUSTED, a grpc-timeout that passes
// DEADLINE_EXCEEDED, and a request it cannot read INVALID_ARGUMENT or
// RESOURCE_EXHAUSTED (over SetMaxPayload).

// gRPC status codes the Triple side answers with.
const (
	grpcOK                = 0
	grpcCanceled          = 1
	grpcUnknown           = 2
	grpcInvalidArgument   = 3
	grpcDeadlineExceeded  = 4
	grpcResourceExhausted = 8
	grpcUnimplemented     = 12
	grpcInternal          = 13
	grpcUnavailable       = 14
)

// tripleReadTimeout bounds the reading of one call's request.
const tripleReadTimeout = 30 * time.Second

// maxTripleArgs bounds the arguments of one call (Java methods take at
// most 255 parameters).
const maxTripleArgs = 255

// tripleStatus is a call's gRPC outcome.
type tripleStatus struct {
	code int
	msg  string
}

// ServeTriple serves the registered services over Triple on ln until
// Close, which closes it and the connections it accepted (after the calls
// running on them, as for the dubbo protocol), and returns its address.
func (s *Server) ServeTriple(ln net.Listener) (net.Addr, error) {
	protocols := new(http.Protocols)
	protocols.SetUnencryptedHTTP2(true)
	hs := &http.Server{
		Handler:           http.HandlerFunc(s.serveTriple),
		Protocols:         protocols,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       tripleReadTimeout, // per stream under HTTP/2: a stalled body frees its slot
		IdleTimeout:       5 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return s.baseCtx },
	}
	if err := s.addListener(ln, hs); err != nil {
		return nil, err
	}
	go func() {
		defer s.wg.Done()
		_ = hs.Serve(ln) // ends when Close closes ln
	}()
	s.logger.Info("in-process Triple provider listening", "addr", ln.Addr().String())
	return ln.Addr(), nil
}

// serveTriple answers one Triple call.
func (s *Server) serveTriple(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 2 || r.Method != http.MethodPost {
		http.Error(w, "Triple calls are HTTP/2 POST requests", http.StatusMethodNotAllowed)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/grpc" && !strings.HasPrefix(ct, "application/grpc+") {
		http.Error(w, "not a gRPC content type: "+ct, http.StatusUnsupportedMediaType)
		return
	}
	w.Header().Set("Content-Type", "application/grpc+proto")
	st := s.tripleCall(w, r)
	w.Header().Set(http.TrailerPrefix+"grpc-status", strconv.Itoa(st.code))
	if st.msg != "" {
		w.Header().Set(http.TrailerPrefix+"grpc-message", grpcwire.EncodeMessage(st.msg))
	}
}

// tripleCall reads the call, runs it, and writes the answer's message
// when it has one.
func (s *Server) tripleCall(w http.ResponseWriter, r *http.Request) tripleStatus {
	iface, method, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if !ok || iface == "" || method == "" || strings.Contains(method, "/") {
		return tripleStatus{grpcUnimplemented, "no service and method in path " + strconv.Quote(r.URL.Path)}
	}
	// The slot first: a request waiting for its body holds one, so at
	// most SetMaxInFlight bodies are being read at once.
	if !s.startCall() {
		s.rejected.Add(1)
		return tripleStatus{grpcResourceExhausted, fmt.Sprintf("provider busy: %d calls running", s.maxInFlight)}
	}
	defer s.endCall()
	msg, st := s.readTripleMessage(r.Body)
	if st.code != grpcOK {
		return st
	}
	wrapper, err := triplewire.DecodeRequest(msg, maxTripleArgs)
	if err != nil {
		return tripleStatus{grpcInvalidArgument, "reading the request wrapper: " + err.Error()}
	}
	if wrapper.SerializeType != "" && wrapper.SerializeType != triplewire.SerializeHessian2 {
		return tripleStatus{grpcUnimplemented, "serialization " + strconv.Quote(wrapper.SerializeType) + ": only hessian2 is spoken"}
	}
	if len(wrapper.Types) != len(wrapper.Args) {
		return tripleStatus{grpcInvalidArgument, fmt.Sprintf("%d arguments with %d types", len(wrapper.Args), len(wrapper.Types))}
	}
	desc, err := protocol.Descriptor(wrapper.Types)
	if err != nil {
		return tripleStatus{grpcInvalidArgument, "argument types: " + err.Error()}
	}
	req := &protocol.DecodedRequest{Path: iface, Version: r.Header.Get("tri-service-version"), Method: method,
		ParamTypes: desc, Attachments: tripleAttachments(r.Header)}
	req.Args = make([]any, len(wrapper.Args))
	for i, a := range wrapper.Args {
		d := hessian.NewDecoder(a)
		if req.Args[i], err = d.Decode(); err == nil && d.Remaining() != 0 {
			err = fmt.Errorf("%d bytes after the value", d.Remaining())
		}
		if err != nil {
			return tripleStatus{grpcInvalidArgument, fmt.Sprintf("argument %d: %v", i, err)}
		}
	}
	svc, key := s.lookup(req)
	switch {
	case svc == nil:
		return tripleStatus{grpcUnimplemented, "not found service " + key.String()}
	case !isGeneric(req) && svc.find(method, desc) == nil:
		return tripleStatus{grpcUnimplemented, "not found method " + method + "(" + strings.Join(wrapper.Types, ", ") + ") in service " + key.String()}
	}
	ctx := r.Context()
	if d, ok := grpcwire.ParseTimeout(r.Header.Get("grpc-timeout")); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	resp := s.invoke(ctx, req, nil)
	s.requests.Add(1)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return tripleStatus{grpcDeadlineExceeded, "the call's grpc-timeout passed"}
	case s.baseCtx.Err() != nil:
		return tripleStatus{grpcUnavailable, "the provider is closing"}
	case ctx.Err() != nil:
		return tripleStatus{grpcCanceled, "the call was cancelled"}
	case resp.Exception != nil:
		x, _ := resp.Exception.(*hessian.Exception) // invoke answers with no other kind
		return tripleStatus{grpcUnknown, exceptionMessage(x)}
	case resp.Status != protocol.StatusOK:
		return tripleStatus{grpcInternal, resp.ErrorMessage}
	}
	e := hessian.NewEncoder(nil)
	if err := e.Encode(resp.Value); err != nil {
		return tripleStatus{grpcInternal, "encoding the result: " + err.Error()}
	}
	frame := triplewire.AppendResponseFrame(nil, e.Bytes(), javaType(resp.Value))
	if n := len(frame) - triplewire.FrameHeaderLen; n > s.maxPayload {
		return tripleStatus{grpcResourceExhausted, fmt.Sprintf("the result is %d bytes, over the limit of %d", n, s.maxPayload)}
	}
	if _, err := w.Write(frame); err != nil {
		return tripleStatus{grpcUnavailable, "writing the result: " + err.Error()}
	}
	return tripleStatus{grpcOK, ""}
}

// readTripleMessage reads the request's one gRPC message, refusing a
// compressed one or one over the payload limit before reading it. The
// buffer grows with the bytes that arrive, not with the length a client
// announces.
func (s *Server) readTripleMessage(body io.Reader) ([]byte, tripleStatus) {
	var hdr [triplewire.FrameHeaderLen]byte
	if _, err := io.ReadFull(body, hdr[:]); err != nil {
		return nil, tripleStatus{grpcInvalidArgument, "reading the request message: " + err.Error()}
	}
	if hdr[0] != 0 {
		return nil, tripleStatus{grpcUnimplemented, "compressed messages are not accepted"}
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if uint64(n) > uint64(s.maxPayload) {
		return nil, tripleStatus{grpcResourceExhausted, fmt.Sprintf("the request message is %d bytes, over the limit of %d", n, s.maxPayload)}
	}
	// MinRead more than the message, or ReadFrom grows the buffer once more at its end.
	buf := bytes.NewBuffer(make([]byte, 0, min(int(n), 64<<10)+bytes.MinRead))
	if _, err := io.CopyN(buf, body, int64(n)); err != nil {
		return nil, tripleStatus{grpcInvalidArgument, "reading the request message: " + err.Error()}
	}
	return buf.Bytes(), tripleStatus{grpcOK, ""}
}

// tripleAttachments are a call's attachments, from its headers as Triple
// carries them: the group from tri-service-group, and every header that
// is neither HTTP's, gRPC's nor Triple's own, by its lower-case name.
func tripleAttachments(h http.Header) map[string]any {
	out := make(map[string]any)
	if g := h.Get("tri-service-group"); g != "" {
		out[protocol.AttachmentGroup] = g
	}
	for k, vs := range h {
		lk := strings.ToLower(k)
		switch {
		case len(vs) == 0, strings.HasPrefix(lk, "grpc-"), strings.HasPrefix(lk, "tri-"),
			lk == "content-type", lk == "te", lk == "user-agent", lk == "content-length", lk == "accept-encoding":
			continue
		}
		out[lk] = vs[0]
	}
	return out
}

// exceptionMessage is how Java Triple reports a method's exception in
// grpc-message: its class and message.
func exceptionMessage(x *hessian.Exception) string {
	if x == nil {
		return "java.lang.RuntimeException"
	}
	if x.Message == "" {
		return x.Class
	}
	return x.Class + ": " + x.Message
}

// javaType is the Java type a result is declared as in the response
// wrapper.
func javaType(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case *hessian.Object:
		return v.Class
	case string:
		return "java.lang.String"
	case bool:
		return "java.lang.Boolean"
	case int32:
		return "java.lang.Integer"
	case int64:
		return "java.lang.Long"
	case float64:
		return "java.lang.Double"
	case *hessian.List:
		return "java.util.List"
	case *hessian.Map:
		return "java.util.Map"
	}
	return "java.lang.Object"
}
