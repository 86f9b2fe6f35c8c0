package protocol

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/dubbogw/dubbogw/hessian"
)

// DefaultDubboVersion is the protocol version Java consumers send.
const DefaultDubboVersion = "2.0.2"

// Generic invocation: the method and descriptor of GenericService.$invoke.
const (
	MethodInvoke      = "$invoke"
	MethodInvokeAsync = "$invokeAsync"
	// GenericParamTypes is the descriptor of $invoke(String method,
	// String[] parameterTypes, Object[] args).
	GenericParamTypes = "Ljava/lang/String;[Ljava/lang/String;[Ljava/lang/Object;"
	// GenericTypesListType and GenericArgsListType are the hessian list
	// types of $invoke's second and third arguments.
	GenericTypesListType = "[string"
	GenericArgsListType  = "[object"
)

// Attachment keys Dubbo gives a meaning to.
const (
	AttachmentPath      = "path"
	AttachmentInterface = "interface"
	AttachmentVersion   = "version"
	AttachmentGroup     = "group"
	AttachmentTimeout   = "timeout" // milliseconds, decimal
	AttachmentGeneric   = "generic" // "true" on a $invoke call
	AttachmentDubbo     = "dubbo"   // the protocol version, added to responses
)

// reservedAttachments are the attachment keys Dubbo itself, its filters
// and routers give a meaning to (org.apache.dubbo.common.constants): the
// service a call is for, generic invocation and its serialization, the
// token of TokenFilter, timeouts, tag routing, the caller's application.
// Only the caller's own code may set them, never a value a client chose.
var reservedAttachments = []string{
	AttachmentPath, AttachmentInterface, AttachmentVersion, AttachmentGroup, AttachmentTimeout, AttachmentGeneric,
	AttachmentDubbo, "token", "tag", "async", "id", "input", "output", "side", "application", "remote.application",
	"consumer", "provider", "methods", "method", "serialization", "loadbalance", "cluster", "retries", "mock",
	"cache", "validation", "sticky", "weight", "warmup", "tps", "executes", "actives", "connections", "protocol",
	"category", "check", "callbacks", "accesslog", "deprecated", "dispatcher", "anyhost", "pid", "timestamp",
	"release", "return", "timeout-countdown", "zone", "zone.force", "interface.version", "request-id",
	"traceparent", "tracestate",
}

// reservedAttachmentPrefixes: Dubbo's own families of keys (dubbo.tag,
// dubbo.force.tag, _TO, sys_callback_arg-N, :path...).
var reservedAttachmentPrefixes = []string{"dubbo.", "_", "sys_callback_arg", ":", "callback.", "tri-", "grpc-"}

// ReservedAttachment reports whether key is an attachment Dubbo gives a
// meaning to (case-insensitively, as Dubbo 3 lowercases keys): one a
// gateway sets itself, or not at all, and never takes from a client.
func ReservedAttachment(key string) bool {
	k := strings.ToLower(strings.TrimSpace(key))
	if slices.Contains(reservedAttachments, k) {
		return true
	}
	for _, p := range reservedAttachmentPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// Request is a call to encode.
type Request struct {
	ID     uint64
	TwoWay bool

	DubboVersion string // DefaultDubboVersion when empty
	Path         string // the service interface
	Version      string // the service version
	Method       string
	ParamTypes   string // JVM descriptor of the parameter types, see Descriptor

	Attachments map[string]string

	// WriteArgs writes the arguments into the body's hessian stream, one
	// value per parameter, so they can be streamed (from JSON, say) without
	// an intermediate tree. Args is used when WriteArgs is nil.
	WriteArgs func(e *hessian.Encoder) error
	Args      []any
}

// AppendRequest appends the whole frame of req (header and body) to dst.
// e is a reusable encoder; AppendRequest resets it, and it holds the frame
// afterwards too. On error dst is returned as it was given.
func AppendRequest(dst []byte, e *hessian.Encoder, req *Request) ([]byte, error) {
	start := len(dst)
	dst = AppendHeader(dst, Header{Request: true, TwoWay: req.TwoWay, ID: req.ID})
	e.Reset(dst)
	version := req.DubboVersion
	if version == "" {
		version = DefaultDubboVersion
	}
	e.WriteString(version)
	e.WriteString(req.Path)
	e.WriteString(req.Version)
	e.WriteString(req.Method)
	e.WriteString(req.ParamTypes)
	if req.WriteArgs != nil {
		if err := req.WriteArgs(e); err != nil {
			return dst[:start], &ProtocolError{Msg: "writing arguments of " + req.Path + "." + req.Method, Err: err}
		}
	} else {
		for i, a := range req.Args {
			if err := e.Encode(a); err != nil {
				return dst[:start], &ProtocolError{Msg: "writing argument " + strconv.Itoa(i) + " of " + req.Path + "." + req.Method, Err: err}
			}
		}
	}
	writeStringMap(e, req.Attachments)
	frame := e.Bytes()
	if err := patchBodyLen(frame, start); err != nil {
		return dst[:start], err
	}
	return frame, nil
}

// sortedKeysMax is the largest map whose keys are written sorted; bigger
// ones are written in Go's iteration order (Java's HashMap has no order
// either), so the sort never allocates.
const sortedKeysMax = 32

// writeStringMap writes m as an untyped map, an empty one when m is nil.
func writeStringMap(e *hessian.Encoder, m map[string]string) {
	e.WriteMapStart("")
	if len(m) <= sortedKeysMax {
		var scratch [sortedKeysMax]string
		keys := scratch[:0]
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			e.WriteString(k)
			e.WriteString(m[k])
		}
	} else {
		for k, v := range m {
			e.WriteString(k)
			e.WriteString(v)
		}
	}
	e.WriteMapEnd()
}

// AppendHeartbeat appends a heartbeat frame: a two-way request event when
// request is true, else the OK response event answering request id. The
// body is hessian null.
func AppendHeartbeat(dst []byte, id uint64, request bool) []byte {
	dst = AppendHeader(dst, Header{Request: request, TwoWay: request, Event: true, Status: StatusOK, ID: id, BodyLen: 1})
	return append(dst, 'N')
}

// ReadonlyEventData is the body of the readonly event a provider sends
// before it shuts down.
const ReadonlyEventData = "R"

// AppendReadonlyEvent appends the one-way request event, body "R", by which
// a provider tells its consumers it is shutting down.
func AppendReadonlyEvent(dst []byte, id uint64) []byte {
	dst = AppendHeader(dst, Header{Request: true, Event: true, ID: id, BodyLen: 2})
	return append(dst, 0x01, 'R') // hessian compact string of length 1
}

// DecodedRequest is a request as read from the wire. For an event only
// Header and EventData are set: nil for a heartbeat, ReadonlyEventData for
// the readonly event.
type DecodedRequest struct {
	Header
	DubboVersion string
	Path         string
	Version      string
	Method       string
	ParamTypes   string
	Args         []any
	Attachments  map[string]any
	EventData    any
}

// IsHeartbeat reports whether the request is a heartbeat event.
func (r *DecodedRequest) IsHeartbeat() bool { return r.Event && r.EventData == nil }

// IsReadonly reports whether the request is the readonly event.
func (r *DecodedRequest) IsReadonly() bool {
	s, ok := r.EventData.(string)
	return r.Event && ok && s == ReadonlyEventData
}

// Group returns the "group" attachment, part of the service's identity.
func (r *DecodedRequest) Group() string {
	s, _ := r.Attachments[AttachmentGroup].(string)
	return s
}

// DecodeRequest decodes the body of a request frame with d (which it
// resets). The number of arguments read is the number of types in
// ParamTypes. Errors are *ProtocolError naming the field being read.
func DecodeRequest(h Header, body []byte, d *hessian.Decoder) (*DecodedRequest, error) {
	if !h.Request {
		return nil, &ProtocolError{Msg: "frame " + strconv.FormatUint(h.ID, 10) + " is a response, not a request"}
	}
	d.Reset(body)
	req := &DecodedRequest{Header: h}
	if h.Event {
		v, err := d.Decode()
		if err != nil && err != io.EOF { // an empty body is a heartbeat too
			return nil, requestError(h, "event data", err)
		}
		req.EventData = v
		return req, nil
	}
	fields := [...]struct {
		dst  *string
		name string
	}{
		{&req.DubboVersion, "dubbo version"},
		{&req.Path, "service path"},
		{&req.Version, "service version"},
		{&req.Method, "method name"},
		{&req.ParamTypes, "parameter types"},
	}
	for _, f := range fields {
		s, err := decodeString(d)
		if err != nil {
			return nil, requestError(h, f.name, err)
		}
		*f.dst = s
	}
	n, err := countDescriptor(req.ParamTypes)
	if err != nil {
		return nil, requestError(h, "parameter types", err)
	}
	if n > d.Remaining() { // every argument takes at least one byte
		return nil, requestError(h, "arguments", fmt.Errorf("%d parameter types but %d bytes left: %w", n, d.Remaining(), io.ErrUnexpectedEOF))
	}
	if n > 0 {
		req.Args = make([]any, n)
		for i := range req.Args {
			v, err := d.Decode()
			if err != nil {
				return nil, requestError(h, "argument "+strconv.Itoa(i), noEOF(err))
			}
			req.Args[i] = v
		}
	}
	att, err := decodeAttachments(d)
	if err != nil {
		return nil, requestError(h, "attachments", err)
	}
	req.Attachments = att
	return req, nil
}

func requestError(h Header, what string, err error) error {
	return &ProtocolError{Msg: "request " + strconv.FormatUint(h.ID, 10) + ": reading " + what, Err: err}
}

// noEOF turns the end of the body where a value was expected into
// io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// decodeString reads a string; null reads as "" (Java writes a null
// service version that way).
func decodeString(d *hessian.Decoder) (string, error) {
	v, err := d.Decode()
	if err != nil {
		return "", noEOF(err)
	}
	switch s := v.(type) {
	case string:
		return s, nil
	case nil:
		return "", nil
	}
	return "", errors.New("got " + typeName(v) + ", want a string")
}

// decodeAttachments reads the trailing attachments map: absent (old
// consumers) and null read as nil; keys that are not strings are dropped.
func decodeAttachments(d *hessian.Decoder) (map[string]any, error) {
	if d.Remaining() == 0 {
		return nil, nil
	}
	v, err := d.Decode()
	if err != nil {
		return nil, err
	}
	var m *hessian.Map
	switch x := v.(type) {
	case nil:
		return nil, nil
	case *hessian.Map:
		m = x
	default:
		return nil, errors.New("got " + typeName(v) + ", want a map")
	}
	att := make(map[string]any, len(m.Entries))
	for _, e := range m.Entries {
		if k, ok := e.Key.(string); ok {
			att[k] = e.Value
		}
	}
	return att, nil
}

// typeName names the hessian type of a decoded value, for error messages.
func typeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case int32:
		return "an int"
	case int64:
		return "a long"
	case float64:
		return "a double"
	case string:
		return "a string"
	case []byte:
		return "a binary"
	case *hessian.List:
		return "a list"
	case *hessian.Map:
		return "a map"
	case *hessian.Object:
		return "an object of class " + x.Class
	}
	return "a value"
}
