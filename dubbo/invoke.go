package dubbo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/dubbogw/dubbogw/dubbo/protocol"
	"github.com/dubbogw/dubbogw/hessian"
)

// Invocation is one call of a service method.
type Invocation struct {
	Interface, Version, Group, Method string
	// ParamTypes are the Java type names of the parameters: "java.lang.String",
	// "int", "com.example.User", "long[]".
	ParamTypes []string
	// Args are the arguments in the hessian value model, one per ParamTypes.
	Args []any
	// WriteArgs, when set, writes the arguments (one value per ParamTypes)
	// straight into the request instead of Args, so they can be streamed.
	WriteArgs func(e *hessian.Encoder) error
	// Attachments are sent with the call (trace context, user id...). The
	// keys path, interface, version, group, timeout and generic are set by
	// the client from the invocation alone: these never set them.
	Attachments map[string]string
	// Generic sends the call as GenericService.$invoke(method, types, args)
	// with the attachment generic=true, for providers whose classes the
	// caller does not have: the provider turns map arguments with a "class"
	// key into objects and answers with maps.
	Generic bool
	// Async, with Generic, calls $invokeAsync instead of $invoke: the
	// provider runs the method asynchronously (Java's CompletableFuture
	// GenericService); the answer on the wire is the same.
	Async bool
}

// Result is a successful call's return value (nil for void or null) and
// the attachments the provider sent back.
type Result struct {
	Value       any
	Attachments map[string]any
}

// invoke runs one call on p and classifies its result for the metrics.
func (c *Client) invoke(ctx context.Context, p *pool, inv *Invocation) (*Result, outcome, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.Timeout)
		defer cancel()
		deadline, _ = ctx.Deadline()
	}
	if err := ctx.Err(); err != nil {
		return nil, contextOutcome(err), callError(p.addr, inv, fmt.Errorf("before sending: %w", err))
	}
	cn, err := p.pick(ctx)
	if err != nil {
		return nil, outcomeOf(err), callError(p.addr, inv, err)
	}
	id := cn.nextID.Add(1)
	frame := c.getBuffer()
	if err := c.encodeRequest(frame, id, inv, deadline); err != nil {
		c.putBuffer(frame)
		return nil, outcomeBadRequest, callError(p.addr, inv, err)
	}
	cl := c.getCall()
	if err := cn.send(id, cl, frame); err != nil {
		c.putBuffer(frame)
		c.putCall(cl)
		return nil, outcomeOf(err), callError(p.addr, inv, err)
	}
	select {
	case <-cl.done:
	case <-ctx.Done():
		if !cn.remove(id, cl) {
			// The reader or the connection's failure took the call first and
			// is handing it over right now: wait, so the call can be reused.
			<-cl.done
			c.putBuffer(cl.body)
		}
		c.putCall(cl)
		err := ctx.Err()
		return nil, contextOutcome(err), callError(p.addr, inv, fmt.Errorf("waiting for the response: %w", err))
	}
	hdr, body, err := cl.hdr, cl.body, cl.err
	c.putCall(cl)
	if err != nil {
		return nil, outcomeOf(err), callError(p.addr, inv, err)
	}
	res, o, err := c.decodeResult(p.addr, inv, hdr, body.b)
	c.putBuffer(body)
	return res, o, err
}

// decodeResult maps a response frame to a Result or an error.
func (c *Client) decodeResult(addr string, inv *Invocation, h protocol.Header, body []byte) (*Result, outcome, error) {
	d := c.decoders.Get().(*hessian.Decoder)
	resp, err := protocol.DecodeResponse(h, body, d)
	d.Reset(nil)
	c.decoders.Put(d)
	switch {
	case err != nil:
		return nil, outcomeDecodeError, callError(addr, inv, fmt.Errorf("decoding the response: %w", err))
	case resp.Status != protocol.StatusOK:
		return nil, outcomeStatusError, &StatusError{Addr: addr, Status: resp.Status, Message: resp.ErrorMessage}
	case resp.Kind.IsException():
		x, _ := hessian.AsException(resp.Exception)
		return nil, outcomeBusinessError, &BusinessError{Addr: addr, Exception: x, Raw: resp.Exception}
	}
	return &Result{Value: resp.Value, Attachments: resp.Attachments}, outcomeOK, nil
}

func contextOutcome(err error) outcome {
	if errors.Is(err, context.DeadlineExceeded) {
		return outcomeTimeout
	}
	return outcomeCanceled
}

func outcomeOf(err error) outcome {
	switch {
	case errors.Is(err, ErrClosed):
		return outcomeClosed
	case errors.Is(err, ErrOverloaded):
		return outcomeOverloaded
	case errors.Is(err, ErrConnect):
		return outcomeConnectError
	case errors.Is(err, ErrConnectionLost):
		return outcomeConnectionLost
	case errors.Is(err, context.DeadlineExceeded):
		return outcomeTimeout
	case errors.Is(err, context.Canceled):
		return outcomeCanceled
	}
	return outcomeBadRequest
}

// requestEncoder is the pooled state of encoding one request.
type requestEncoder struct {
	enc         *hessian.Encoder
	attachments map[string]string
	req         protocol.Request
	inv         *Invocation
	// writeGeneric is writeGenericArgs bound once, so a generic call does
	// not allocate a closure.
	writeGeneric func(*hessian.Encoder) error
}

func newRequestEncoder() *requestEncoder {
	r := &requestEncoder{enc: hessian.NewEncoder(nil), attachments: make(map[string]string, 8)}
	r.writeGeneric = r.writeGenericArgs
	return r
}

// writeGenericArgs writes $invoke's arguments: the method name, the
// parameter type names as a String[] and the arguments as an Object[].
func (r *requestEncoder) writeGenericArgs(e *hessian.Encoder) error {
	inv := r.inv
	e.WriteString(inv.Method)
	e.WriteListStart(protocol.GenericTypesListType, len(inv.ParamTypes))
	for _, t := range inv.ParamTypes {
		e.WriteString(t)
	}
	e.WriteListStart(protocol.GenericArgsListType, len(inv.ParamTypes))
	if inv.WriteArgs != nil {
		return inv.WriteArgs(e)
	}
	for i, a := range inv.Args {
		if err := e.Encode(a); err != nil {
			return fmt.Errorf("argument %d: %w", i, err)
		}
	}
	return nil
}

// encodeRequest encodes inv as the request frame id into frame.
func (c *Client) encodeRequest(frame *buffer, id uint64, inv *Invocation, deadline time.Time) error {
	if inv.WriteArgs == nil && len(inv.Args) != len(inv.ParamTypes) {
		return fmt.Errorf("%d arguments for %d parameter types", len(inv.Args), len(inv.ParamTypes))
	}
	r := c.encoders.Get().(*requestEncoder)
	defer func() {
		r.enc.Reset(nil) // the encoder wrote into frame: let go of it
		clear(r.attachments)
		r.req, r.inv = protocol.Request{}, nil
		c.encoders.Put(r)
	}()
	att := r.attachments
	for k, v := range inv.Attachments {
		att[k] = v
	}
	att[protocol.AttachmentPath] = inv.Interface
	att[protocol.AttachmentInterface] = inv.Interface
	att[protocol.AttachmentVersion] = inv.Version
	// The keys that say which service and kind of call this is come from
	// the invocation alone, never from its attachments.
	delete(att, protocol.AttachmentGroup)
	delete(att, protocol.AttachmentGeneric)
	if inv.Group != "" {
		att[protocol.AttachmentGroup] = inv.Group
	}
	att[protocol.AttachmentTimeout] = strconv.FormatInt(max(time.Until(deadline).Milliseconds(), 1), 10)
	r.req = protocol.Request{
		ID:           id,
		TwoWay:       true,
		DubboVersion: c.opts.DubboVersion,
		Path:         inv.Interface,
		Version:      inv.Version,
		Attachments:  att,
	}
	if inv.Generic {
		att[protocol.AttachmentGeneric] = "true"
		r.inv = inv
		r.req.Method = protocol.MethodInvoke
		if inv.Async {
			r.req.Method = protocol.MethodInvokeAsync
		}
		r.req.ParamTypes = protocol.GenericParamTypes
		r.req.WriteArgs = r.writeGeneric
	} else {
		desc, err := c.descriptors.get(inv.ParamTypes)
		if err != nil {
			return err
		}
		r.req.Method = inv.Method
		r.req.ParamTypes = desc
		r.req.WriteArgs = inv.WriteArgs
		r.req.Args = inv.Args
	}
	b, err := protocol.AppendRequest(frame.b[:0], r.enc, &r.req)
	if err != nil {
		return fmt.Errorf("encoding the request: %w", err)
	}
	frame.b = b
	if n := len(b) - protocol.HeaderLen; n > c.opts.MaxPayload {
		return fmt.Errorf("%w: request body of %d bytes, over the limit of %d bytes", ErrPayloadTooLarge, n, c.opts.MaxPayload)
	}
	return nil
}

// descriptorCache maps parameter type lists to their JVM descriptor string,
// so a typed call's descriptor is built in a stack buffer and looked up
// without allocating. It keeps at most maxDescriptors entries.
type descriptorCache struct {
	mu sync.RWMutex
	m  map[string]string
}

const maxDescriptors = 4096

func (dc *descriptorCache) get(types []string) (string, error) {
	if len(types) == 0 {
		return "", nil
	}
	var scratch [256]byte
	b := scratch[:0]
	for i, t := range types {
		var err error
		if b, err = protocol.AppendDescriptor(b, t); err != nil {
			return "", fmt.Errorf("parameter type %d: %w", i, err)
		}
	}
	dc.mu.RLock()
	desc, ok := dc.m[string(b)]
	dc.mu.RUnlock()
	if ok {
		return desc, nil
	}
	desc = string(b)
	dc.mu.Lock()
	if len(dc.m) < maxDescriptors {
		dc.m[desc] = desc
	}
	dc.mu.Unlock()
	return desc, nil
}
