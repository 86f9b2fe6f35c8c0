// Package dubboroute turns HTTP requests into Dubbo calls and their results
// into JSON responses: the upstream of a route with a `dubbo:` section. It
// maps request parts to Java-typed arguments (hessian/jsonbridge), finds
// providers through a registry directory, chooses one through the cluster
// (load balancing, failover, breakers) and calls it with the dubbo client.
package dubboroute

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/dubbogw/dubbogw/cluster"
	"github.com/dubbogw/dubbogw/dubbo"
	"github.com/dubbogw/dubbogw/dubbo/protocol"
	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/governance"
	"github.com/dubbogw/dubbogw/hessian/jsonbridge"
	"github.com/dubbogw/dubbogw/idl"
	"github.com/dubbogw/dubbogw/observe"
	"github.com/dubbogw/dubbogw/registry"
	"github.com/dubbogw/dubbogw/triple"
)

// Deps are the process-wide parts a Dubbo route uses.
type Deps struct {
	Client *dubbo.Client
	// Triple calls the providers offered over Triple (tri://); nil: the
	// route leaves them out.
	Triple *triple.Client
	// References are the reference caches of the registries, by name.
	References map[string]*registry.References
	// Types are DTO field types shared by every route (dubbo.types).
	Types map[string]map[string]string
	// AllowedClasses are the classes every route lets clients name
	// (dubbo.allowed_classes), beyond the declared ones.
	AllowedClasses []string
	// ClusterMetrics receives load-balancing and breaker metrics; nil: none.
	ClusterMetrics *cluster.Metrics
	// Log receives the route's warnings; nil: discarded.
	Log *slog.Logger
	// Tracer makes a client span of every call attempt and sends its trace
	// context to the provider; nil (tracing off) passes the client's
	// traceparent and tracestate headers on as attachments instead.
	Tracer trace.Tracer
	// Encoders, when set, shares one encoder among the routes of a table
	// that declare no types or classes of their own.
	Encoders *Encoders
}

// Encoders shares the JSON bridge encoder of the routes of one table that
// declare no types or classes of their own (most routes): compiled once
// from Deps.Types and Deps.AllowedClasses instead of once per route, a
// copy of ~0.6 KB each at 5,000 routes. An Encoder is immutable once
// made, so routes may share it. The zero value is ready; a table is built
// on one goroutine.
type Encoders struct {
	byGeneric [2]*jsonbridge.Encoder // [0]: generic false, [1]: true
}

// encoder returns the shared encoder of opts (made on first use).
func (es *Encoders) encoder(opts jsonbridge.EncodeOptions) (*jsonbridge.Encoder, error) {
	i := 0
	if opts.Generic {
		i = 1
	}
	if es.byGeneric[i] == nil {
		enc, err := jsonbridge.NewEncoder(opts)
		if err != nil {
			return nil, err
		}
		es.byGeneric[i] = enc
	}
	return es.byGeneric[i], nil
}

// Handler serves one Dubbo route.
type Handler struct {
	route    string
	cfg      *Config
	client   *dubbo.Client
	triple   *triple.Client // nil: tri providers are left out
	protocol protocolChoice
	log      *slog.Logger
	enc      *jsonbridge.Encoder
	jsonOpts jsonbridge.DecodeOptions
	cluster  *cluster.Cluster
	timeout  time.Duration
	tracer   trace.Tracer // nil: no spans
	budget   bodyBudget
	refusals observe.LogSampler // bounds the log lines about refused requests
	failures observe.LogSampler // and about failed calls
	// tag is the route's constant Dubbo tag; tagHeader (canonical) the
	// header a call's tag is read from when tag is not set ("": none).
	tag, tagHeader string

	// fromHeaders are attachments_from: request headers sent as attachments.
	fromHeaders []headerAttachment

	// A method route:
	refs       *registry.References
	ref        *registry.Reference // pinned while the route lives
	dir        *registry.Directory
	params     []param
	bodyMode   bodyMode
	bodyParams int
	bodyTypes  []*jsonbridge.Type
	paramTypes []string // erased Java names, for $invoke and descriptors

	// A pass-through route:
	passthrough *passthrough

	// An IDL route (protobuf over Triple): its method, from a descriptor
	// set, or reflected from its providers.
	idl       *idl.Method
	reflected *reflectedMethod
}

// New compiles a route's Dubbo section. Release the handler with Close.
func New(route string, cfg *Config, d Deps) (*Handler, error) {
	refs, ok := d.References[cfg.Registry]
	if !ok || refs == nil {
		return nil, fmt.Errorf("registry: %q is not defined", cfg.Registry)
	}
	schema := jsonbridge.Schema{}
	for class, fields := range d.Types {
		schema[class] = fields
	}
	for class, fields := range cfg.Types {
		schema[class] = fields
	}
	// A client names only the declared classes, those of the schema and
	// the allowed ones (a pass-through: also its interfaces' packages);
	// known gadgets never.
	allowed := append(slices.Clone(d.AllowedClasses), cfg.AllowedClasses...)
	if cfg.Passthrough != nil {
		allowed = append(allowed, interfacePackages(cfg.Passthrough.Allow)...)
	}
	opts := jsonbridge.EncodeOptions{Generic: *cfg.Generic, Schema: schema, RestrictClasses: true, AllowClasses: allowed}
	var enc *jsonbridge.Encoder
	var err error
	if d.Encoders != nil && len(cfg.Types) == 0 && len(cfg.AllowedClasses) == 0 && cfg.Passthrough == nil {
		enc, err = d.Encoders.encoder(opts) // the same options as every such route of the table
	} else {
		enc, err = jsonbridge.NewEncoder(opts)
	}
	if err != nil {
		return nil, fmt.Errorf("types: %w", err)
	}
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Handler{
		route:    route,
		cfg:      cfg,
		client:   d.Client,
		triple:   d.Triple,
		protocol: protocolChoice{mode: cfg.Protocol},
		log:      log,
		enc:      enc,
		timeout:  cfg.Timeout.D(),
		tracer:   d.Tracer,
		budget:   bodyBudget{limit: int64(cfg.MaxBodyBytesInFlight)},
		tag:      cfg.Tag,
		jsonOpts: jsonbridge.DecodeOptions{
			KeepClass: cfg.Result.KeepClass, LongAsNumber: cfg.Result.LongAsNumber, BigAsNumber: cfg.Result.BigAsNumber,
		},
	}
	h.fromHeaders = headerAttachments(cfg)
	if cfg.Tag == "" && cfg.TagHeader != nil && *cfg.TagHeader != "" {
		h.tagHeader = http.CanonicalHeaderKey(*cfg.TagHeader)
	}
	d.Log = log // the cluster logs breaker transitions through the same logger
	if h.cluster, err = newCluster(route, cfg, d); err != nil {
		return nil, err
	}
	if cfg.Passthrough != nil {
		h.passthrough = newPassthrough(cfg.Passthrough, refs)
		return h, nil
	}
	if cfg.IDL != nil && cfg.IDL.Reflection {
		h.reflected = newReflectedMethod()
	} else if cfg.IDL != nil {
		if h.idl, err = idl.Load(cfg.IDL.DescriptorSet, cfg.Interface, cfg.Method); err != nil {
			h.cluster.Close()
			return nil, fmt.Errorf("idl.descriptor_set: %w", err)
		}
	} else if h.params, h.bodyMode, err = compileParams(enc, cfg.Params); err != nil {
		return nil, err
	}
	for i := range h.params {
		h.paramTypes = append(h.paramTypes, h.params[i].erased)
		if h.params[i].from == FromBody && len(h.params[i].pointer) == 0 {
			h.bodyParams++
			h.bodyTypes = append(h.bodyTypes, h.params[i].typ)
		}
	}
	if !*cfg.Generic {
		if _, err := protocol.Descriptor(h.paramTypes); err != nil {
			return nil, fmt.Errorf("params: %w", err)
		}
	}
	// One reference per (service, timeout) and one directory per service
	// key, shared with every other route calling the same service; a service
	// with no provider keeps its one directory, waiting for providers.
	h.refs = refs
	h.ref = refs.Pin(registry.RefKey{
		Service: registry.ServiceKey{Interface: cfg.Interface, Group: cfg.Group, Version: cfg.Version}, Timeout: h.timeout})
	if h.ref == nil {
		h.cluster.Close()
		return nil, fmt.Errorf("registry: %q is closed", cfg.Registry)
	}
	h.dir = h.ref.Dir
	return h, nil
}

// serveIDL calls the route's IDL method with the request's JSON body as
// its request message.
func (h *Handler) serveIDL(ctx context.Context, w http.ResponseWriter, r *http.Request, body []byte) {
	m := h.idl
	if h.reflected != nil {
		var err error
		providers := h.protocols(waitProviders(ctx, h.dir))
		if m, err = h.reflected.method(ctx, h.triple, providers, h.cfg.Interface, h.cfg.Method); err != nil {
			if len(providers) == 0 {
				exchange.Fail(w, r, exchange.CodeNoProvider, noProvider(h.dir))
				return
			}
			exchange.Fail(w, r, exchange.CodeBadGateway, h.detail(r, err, "the descriptors of "+h.serviceName()+" could not be read through its provider's gRPC reflection"))
			return
		}
	}
	payload, err := m.Encode(body)
	if err != nil {
		var re *idl.RequestError
		if errors.As(err, &re) {
			err = &argError{msg: re.Msg}
		}
		h.writeErr(w, r, err)
		return
	}
	tag, terr := h.requestTag(r)
	if terr != nil {
		h.writeErr(w, r, terr)
		return
	}
	inv := &dubbo.Invocation{
		Interface: h.cfg.Interface, Version: h.cfg.Version, Group: h.cfg.Group, Method: h.cfg.Method,
		Args: []any{payload, m}, Attachments: h.attachments(r, tag),
	}
	h.call(ctx, w, r, h.dir, inv, "", tag, nil)
}

// protocols are the providers of a snapshot the route calls: those of
// its protocol (dubbo, tri, or auto's choice), and no tri provider
// without a Triple client.
func (h *Handler) protocols(snapshot []*cluster.Provider) []*cluster.Provider {
	ps := h.protocol.of(snapshot)
	if h.triple == nil && len(ps) > 0 && ps[0].Protocol == cluster.ProtocolTriple {
		return nil
	}
	return ps
}

// noProviderOfProtocol is the message of a call whose service has
// providers, none of the protocol the route calls.
func (h *Handler) noProviderOfProtocol(dir *registry.Directory) string {
	if h.triple == nil {
		return "no provider for " + dir.Key().String() + " over dubbo: its providers offer it only over tri, which this gateway was built without"
	}
	return "no provider for " + dir.Key().String() + " over " + h.cfg.Protocol + ": its providers offer it only over another protocol (set the route's dubbo.protocol)"
}

// invoke calls inv on p with the client of p's protocol.
func (h *Handler) invoke(ctx context.Context, p *cluster.Provider, inv *dubbo.Invocation) (*dubbo.Result, error) {
	if h.idl != nil || h.reflected != nil {
		// The request message, encoded, is the invocation's first argument
		// (the method its second); the answer's bytes are the result's value.
		b, err := h.triple.InvokeProto(ctx, dubbo.Target{Addr: p.Addr, TLS: p.TLS}, inv, inv.Args[0].([]byte))
		if err != nil {
			return nil, err
		}
		return &dubbo.Result{Value: b}, nil
	}
	if p.Protocol == cluster.ProtocolTriple {
		return h.triple.Invoke(ctx, dubbo.Target{Addr: p.Addr, TLS: p.TLS}, inv)
	}
	return h.client.InvokeTarget(ctx, dubbo.Target{Addr: p.Addr, TLS: p.TLS}, inv)
}

// readonly excludes providers that announced they are shutting down.
func (h *Handler) readonly(p *cluster.Provider) bool {
	return h.client != nil && h.client.Readonly(p.Addr)
}

// Directory is the directory of a method route (nil for a pass-through
// route): start-up waits on it, and check: true looks at its providers.
func (h *Handler) Directory() *registry.Directory { return h.dir }

// Close releases the route's reference and cluster.
func (h *Handler) Close() {
	h.cluster.Close()
	if h.ref != nil {
		h.refs.Unpin(h.ref)
	}
}

// ServeHTTP calls the route's method with the request's arguments.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The route's deadline covers decoding the arguments as well as the
	// call: a huge body is cut short there, not encoded for nothing.
	ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
	defer cancel()
	if msg := h.checkMappedHeaders(r); msg != "" {
		h.badRequest(w, r, msg) // before the body is read
		return
	}
	body, held, err := h.readBody(r)
	defer h.budget.give(held)
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	if h.passthrough != nil {
		h.servePassthrough(ctx, w, r, body)
		return
	}
	if h.idl != nil || h.reflected != nil {
		h.serveIDL(ctx, w, r, body)
		return
	}
	tag, aerr := h.requestTag(r)
	if aerr != nil {
		h.refuse(r, aerr.msg)
		exchange.Fail(w, r, exchange.CodeBadRequest, aerr.msg)
		return
	}
	a, aerr := h.resolve(r, body)
	if aerr != nil {
		h.refuse(r, aerr.msg)
		exchange.Fail(w, r, exchange.CodeBadRequest, aerr.msg)
		return
	}
	a.ctx = ctx
	inv := &dubbo.Invocation{
		Interface: h.cfg.Interface, Version: h.cfg.Version, Group: h.cfg.Group, Method: h.cfg.Method,
		ParamTypes: h.paramTypes, WriteArgs: a.write, Generic: *h.cfg.Generic, Async: h.cfg.Async,
		Attachments: h.attachments(r, tag),
	}
	h.call(ctx, w, r, h.dir, inv, h.hashKey(a), tag, a)
}

// requestTag is the call's Dubbo tag: the route's, else the value of its
// tag header (bounded and checked: a client names a tag, nothing else).
func (h *Handler) requestTag(r *http.Request) (string, *argError) {
	if h.tag != "" || h.tagHeader == "" {
		return h.tag, nil
	}
	vs := r.Header[h.tagHeader]
	switch {
	case len(vs) == 0 || vs[0] == "":
		return "", nil
	case len(vs) > 1:
		return "", &argError{msg: h.tagHeader + " is given more than once"}
	case !ValidTag(vs[0]):
		return "", &argError{msg: fmt.Sprintf("%s: a Dubbo tag is at most %d letters, digits, '.', '-' and '_'", h.tagHeader, MaxTagLen)}
	}
	return vs[0], nil
}

// call runs the invocation through the cluster, within ctx (the route's
// deadline), and writes the answer. The service's governance rules
// (dir.Router) read the call's tag and arguments (nil: none readable).
func (h *Handler) call(ctx context.Context, w http.ResponseWriter, r *http.Request, dir *registry.Directory, inv *dubbo.Invocation, hashKey, tag string, args governance.Arguments) {
	info := exchange.From(r.Context())
	providers := dir.Providers()
	if len(providers) == 0 && dir.State() == registry.DirPending {
		// The registry has not answered for this service yet (the first
		// call of a pass-through service key, a route added by a reload):
		// wait for its first answer, within the call's timeout. Once it
		// has answered, a service without provider answers at once.
		select {
		case <-dir.Ready():
			providers = dir.Providers()
		case <-ctx.Done():
		}
	}
	if len(providers) == 0 {
		// No provider: answer at once; the directory stays subscribed and
		// traffic flows as soon as one registers.
		exchange.Fail(w, r, exchange.CodeNoProvider, noProvider(dir))
		return
	}
	if providers = h.protocols(providers); len(providers) == 0 {
		exchange.Fail(w, r, exchange.CodeNoProvider, h.noProviderOfProtocol(dir))
		return
	}
	var whole []*cluster.Provider // the snapshot the rules narrowed, when they did
	if router := dir.Router(); router != nil {
		// Dubbo's tag and condition rules (and static tags): nil without
		// any, so a service without rules pays one atomic load.
		sel := governance.Request{Method: inv.Method, Tag: tag, Args: args, Attachments: inv.Attachments}
		routed := router.Route(providers, &sel)
		if len(routed) == 0 {
			exchange.Fail(w, r, exchange.CodeNoProvider, noProviderByRules(dir, tag))
			return
		}
		if len(routed) != len(providers) || &routed[0] != &providers[0] {
			whole = providers
		}
		providers = routed
	}
	call := &cluster.Call{Method: inv.Method, HashKey: hashKey, Exclude: h.readonly, Snapshot: whole}
	if h.passthrough != nil {
		call.Service = dir.Key().String() // its own breaker: one service failing never stops the others
	}
	res, err := h.cluster.Invoke(ctx, providers, call,
		func(ctx context.Context, p *cluster.Provider) (any, error) {
			if p.Timeout > 0 {
				// A configurator's timeout for this provider: within the route's.
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, p.Timeout)
				defer cancel()
			}
			if info != nil {
				info.Upstream = p.Protocol.String() + "://" + p.Addr + "/" + dir.Key().String()
			}
			if h.tracer != nil {
				return h.invokeTraced(ctx, p, inv)
			}
			return h.invoke(ctx, p, inv)
		})
	if err != nil {
		if call.Service != "" && errors.Is(err, cluster.ErrBreakerOpen) {
			// A pass-through service's own breaker (or all its providers'):
			// name the service, the route's other services are not affected.
			exchange.Fail(w, r, exchange.CodeBreakerOpen, "circuit breaker open for "+call.Service+" on route "+h.route+": failing fast")
			return
		}
		h.writeErr(w, r, err)
		return
	}
	result, _ := res.(*dubbo.Result)
	var v any
	if result != nil {
		v = result.Value
	}
	var out []byte
	if h.idl != nil || h.reflected != nil {
		msg, _ := v.([]byte)
		out, err = inv.Args[1].(*idl.Method).Decode(msg)
		if err != nil {
			exchange.Fail(w, r, exchange.CodeBadGateway, h.detail(r, err, "the provider's answer is not the method's response message"))
			return
		}
	} else if out, err = jsonbridge.AppendJSON(make([]byte, 0, 512), v, &h.jsonOpts); err != nil {
		exchange.Fail(w, r, exchange.CodeBadGateway, "the result cannot be written as JSON: "+err.Error())
		return
	}
	out = append(out, '\n')
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

// attachments are the route's constant attachments, those of its mapped
// headers (attachments_from), the request id and the call's Dubbo tag
// (dubbo.tag, which a provider's own tag router reads too). With tracing
// on, each attempt adds the W3C trace context of its own span
// (invokeTraced); with tracing off, the client's traceparent and
// tracestate are passed on, so a Java provider with OpenTelemetry still
// continues the caller's trace.
func (h *Handler) attachments(r *http.Request, tag string) map[string]string {
	info := exchange.From(r.Context())
	n := len(h.cfg.Attachments) + len(h.fromHeaders) + 4
	if info != nil {
		n += len(info.Attachments)
	}
	m := make(map[string]string, n)
	for k, v := range h.cfg.Attachments {
		m[k] = v
	}
	h.addMappedHeaders(r, m) // keys validation keeps apart from the constants and from what follows
	if info != nil {
		if info.RequestID != "" {
			m["request-id"] = info.RequestID
		}
		// Identity from the auth filter wins over constants: a route cannot
		// be configured, nor a client trick it, into sending another user.
		for k, v := range info.Attachments {
			m[k] = v
		}
	}
	if tag != "" {
		m[governance.TagKey] = tag
	}
	if h.tracer == nil {
		for _, k := range [...]string{"traceparent", "tracestate"} {
			if v := r.Header.Get(k); v != "" {
				m[k] = v
			}
		}
	}
	return m
}

// hashKey renders the consistent-hash arguments.
func (h *Handler) hashKey(a *args) string {
	if h.cfg.LoadBalance != cluster.PolicyConsistentHash {
		return ""
	}
	var b strings.Builder
	for _, i := range h.cfg.HashArguments {
		if i < 0 || i >= len(h.params) {
			continue
		}
		p := &h.params[i]
		switch p.from {
		case FromBody:
			if a.raws != nil {
				b.Write(a.raws[i])
			} else {
				b.Write(a.body)
			}
		case FromConstant:
			b.WriteString(*p.value)
		default:
			s, _ := a.str(p)
			b.WriteString(s)
		}
	}
	return b.String()
}

// writeErr maps a failed call to the gateway's JSON error. A client sees
// the status and, for an exception, its class and message; what the
// provider or the transport said besides (addresses of the gateway's
// connections and of providers, the provider's exported services) goes to
// the log, unless the route asks for detailed errors.
func (h *Handler) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	var (
		ae  *argError
		be  *dubbo.BusinessError
		se  *dubbo.StatusError
		ts  *triple.StatusError
		mbe *http.MaxBytesError
	)
	switch {
	case exchange.BodyFailure(r, err) != nil:
		// The client's body failed: its fault, counted by the gateway,
		// logged at debug level only (clients choose how many they send).
		h.log.Debug("client request body failed", "route", h.route, "error", err)
		exchange.WriteBodyError(w, r, err)
	case errors.Is(err, errBudget):
		h.refuse(r, err.Error())
		exchange.Fail(w, r, exchange.CodeShed, "route "+h.route+" "+err.Error()+"; retry later")
	case errors.As(err, &ae):
		h.refuse(r, ae.msg)
		exchange.Fail(w, r, exchange.CodeBadRequest, ae.msg)
	case errors.As(err, &mbe):
		exchange.Fail(w, r, exchange.CodeTooLarge,
			fmt.Sprintf("request body exceeds the limit of %d bytes", mbe.Limit))
	case errors.Is(err, dubbo.ErrPayloadTooLarge):
		// The arguments encode to more than a provider accepts: never sent.
		exchange.Fail(w, r, exchange.CodeTooLarge,
			"the arguments encode to more than the provider's payload limit (dubbo.max_payload)")
	case errors.Is(err, io.ErrUnexpectedEOF):
		exchange.Fail(w, r, exchange.CodeBadRequest, "the request body ended before its Content-Length")
	case errors.As(err, &be):
		msg := "the provider threw an exception"
		if be.Exception != nil {
			msg = be.Exception.Class + ": " + be.Exception.Message
		}
		exchange.WriteError(w, r, h.cfg.ExceptionStatus, exchange.CodeDubboException, msg)
	case errors.As(err, &ts) && ts.Business():
		// A Triple method's own failure: its status and message, as a
		// dubbo exception's class and message.
		exchange.WriteError(w, r, h.cfg.ExceptionStatus, exchange.CodeDubboException, ts.Code.String()+": "+ts.Message)
	case errors.As(err, &ts):
		switch ts.Code {
		case triple.DeadlineExceeded:
			exchange.Fail(w, r, exchange.CodeTimeout, h.detail(r, err, h.serviceName()+" answered "+ts.Code.String()))
		case triple.ResourceExhausted:
			exchange.Fail(w, r, exchange.CodeOverloaded, h.detail(r, err, h.serviceName()+" answered "+ts.Code.String()))
		default:
			exchange.Fail(w, r, exchange.CodeBadGateway, h.detail(r, err, h.serviceName()+" answered "+ts.Code.String()))
		}
	case errors.Is(err, cluster.ErrBreakerOpen):
		exchange.Fail(w, r, exchange.CodeBreakerOpen, "circuit breaker open for route "+h.route+": failing fast")
	case errors.Is(err, cluster.ErrNoProvider):
		exchange.Fail(w, r, exchange.CodeNoProvider, h.detail(r, err, "no provider available for "+h.serviceName()))
	case errors.As(err, &se):
		switch se.Status {
		case protocol.StatusClientTimeout, protocol.StatusServerTimeout:
			exchange.Fail(w, r, exchange.CodeTimeout, h.detail(r, err, h.serviceName()+" answered "+se.Status.String()))
		case protocol.StatusThreadpoolExhausted:
			exchange.Fail(w, r, exchange.CodeOverloaded, h.detail(r, err, h.serviceName()+" answered "+se.Status.String()))
		default:
			exchange.Fail(w, r, exchange.CodeBadGateway, h.detail(r, err, h.serviceName()+" answered "+se.Status.String()))
		}
	case errors.Is(err, dubbo.ErrOverloaded):
		exchange.Fail(w, r, exchange.CodeOverloaded,
			h.detail(r, err, "the connection to the provider is at its pending-call limit; retry later"))
	case errors.Is(err, context.DeadlineExceeded):
		exchange.Fail(w, r, exchange.CodeTimeout,
			fmt.Sprintf("no answer from %s within %s", h.serviceName(), h.timeout))
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		if info := exchange.From(r.Context()); info != nil {
			info.ErrorCode = exchange.CodeClientClosed
		}
	default:
		exchange.Fail(w, r, exchange.CodeBadGateway,
			h.detail(r, err, "the call to "+h.serviceName()+" failed: the provider could not be reached or broke the exchange"))
	}
}

// detail logs err in full and returns what the client is told: brief,
// unless the route asks for detailed errors.
func (h *Handler) detail(r *http.Request, err error, brief string) string {
	if ok, suppressed := h.failures.Allow(time.Now()); ok {
		h.log.Warn("dubbo call failed", "route", h.route, "request_id", requestID(r), "error", err.Error(), "suppressed", suppressed)
	}
	if h.cfg.DetailedErrors {
		return err.Error()
	}
	return brief
}

// refuse logs a refused request, at most about once a second per route.
func (h *Handler) refuse(r *http.Request, reason string) {
	if ok, suppressed := h.refusals.Allow(time.Now()); ok {
		h.log.Warn("refused a request to a dubbo route", "route", h.route, "request_id", requestID(r), "reason", reason, "suppressed", suppressed)
	}
}

func requestID(r *http.Request) string {
	if info := exchange.From(r.Context()); info != nil {
		return info.RequestID
	}
	return ""
}

// noProvider is the message of a call to dir's service while it has no
// provider, naming the versions and groups of the interface that do
// have some (a client that left out the version, or named another).
func noProvider(dir *registry.Directory) string {
	msg := "no provider for " + dir.Key().String()
	if offered := dir.Offered(); len(offered) > 0 {
		names := make([]string, len(offered))
		for i, k := range offered {
			names[i] = describeKey(k)
		}
		msg += "; the registry has providers of " + dir.Key().Interface + " for " + strings.Join(names, "; ")
	}
	return msg
}

// noProviderByRules is the message of a call the service's governance
// rules leave no provider for.
func noProviderByRules(dir *registry.Directory, tag string) string {
	msg := "no provider for " + dir.Key().String() + " under its Dubbo governance rules"
	if tag != "" {
		msg += " for tag " + tag
	}
	return msg + " (see /admin/services)"
}

// describeKey says a service key's version and group in words.
func describeKey(k registry.ServiceKey) string {
	switch {
	case k.Group == "" && k.Version == "":
		return "no version and no group"
	case k.Group == "":
		return "version " + k.Version
	case k.Version == "":
		return "group " + k.Group
	}
	return "version " + k.Version + ", group " + k.Group
}

func (h *Handler) serviceName() string {
	if h.dir != nil {
		return h.dir.Key().String() + "." + h.cfg.Method
	}
	return "the provider"
}

// Breakers reports the route's circuit breakers, for the admin API.
func (h *Handler) Breakers() []cluster.BreakerStatus { return h.cluster.Breakers() }

// OpenBreakers counts the route's breakers not closed, at a cost that does
// not grow with its providers or services (the admin summary's).
func (h *Handler) OpenBreakers() cluster.OpenBreakers { return h.cluster.OpenBreakers() }

// ServiceBreaker reports the breaker a pass-through route keeps for
// service (a service key), if it keeps one.
func (h *Handler) ServiceBreaker(service string) (cluster.BreakerStatus, bool) {
	return h.cluster.ServiceBreaker(service)
}
