package dubboroute

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/dubbogw/dubbogw/cluster"
	"github.com/dubbogw/dubbogw/dubbo"
	"github.com/dubbogw/dubbogw/dubbo/protocol"
	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/hessian"
	"github.com/dubbogw/dubbogw/hessian/jsonbridge"
	"github.com/dubbogw/dubbogw/registry"
)

// passthrough is the generic pass-through endpoint of a route:
// POST <prefix>/{interface}/{method} with
// {"types": [...], "args": [...], "version": "...", "group": "...", "attachments": {...}}.
// Clients choose interface, version and group, so the services it reaches
// are theirs to grow: it takes references from the registry's bounded
// reference cache (References.OnDemand), never subscribes on its own. A
// name the registry knows nobody registered answers 503 NO_PROVIDER from
// memory, and new subscriptions beyond the cache's per-second and total
// limits answer 503 SUBSCRIBE_LIMITED. They choose the parameter types
// too, which are checked as "class" keys are (Encoder.ClientType), and the
// attachments, which must be on the route's allow-list.
type passthrough struct {
	exact       map[string]bool
	prefixes    []string
	attachments []string // the keys a client may send
	refs        *registry.References
}

// maxParams is the JVM's bound on a method's parameters.
const maxParams = 255

func newPassthrough(cfg *Passthrough, refs *registry.References) *passthrough {
	p := &passthrough{exact: map[string]bool{}, refs: refs, attachments: cfg.Attachments}
	for _, a := range cfg.Allow {
		if strings.HasSuffix(a, ".*") {
			p.prefixes = append(p.prefixes, strings.TrimSuffix(a, "*"))
		} else {
			p.exact[a] = true
		}
	}
	return p
}

// interfacePackages are the packages of the allowed interfaces, where
// their DTOs live: "com.example.*" for com.example.* and for
// com.example.UserService.
func interfacePackages(allow []string) []string {
	out := make([]string, 0, len(allow))
	for _, a := range allow {
		if strings.HasSuffix(a, ".*") {
			out = append(out, a)
		} else if i := strings.LastIndexByte(a, '.'); i > 0 {
			out = append(out, a[:i]+".*")
		}
	}
	return out
}

func (p *passthrough) allowed(iface string) bool {
	if p.exact[iface] {
		return true
	}
	for _, pre := range p.prefixes {
		if strings.HasPrefix(iface, pre) {
			return true
		}
	}
	return false
}

// passthroughBody is the request body of the pass-through.
type passthroughBody struct {
	Types       []string
	Args        span
	Version     string
	Group       string
	Attachments map[string]string
}

// span is a JSON value kept as a slice of the body it was read from: no
// copy (json.Unmarshal hands Unmarshalers slices of its input, which is
// the request's body buffer, never written again).
type span []byte

func (s *span) UnmarshalJSON(b []byte) error {
	*s = b
	return nil
}

const passthroughShape = `the body must be {"types": [...], "args": [...], "version", "group", "attachments"}`

// parsePassthrough reads the body in place: one pass finds its members
// (args stays a slice of the body, never copied nor parsed here), then
// the small ones are decoded. Member names are exact: an unknown or
// differently cased one is refused.
func parsePassthrough(raw []byte) (passthroughBody, error) {
	var body passthroughBody
	if len(bytes.TrimSpace(raw)) == 0 {
		return body, nil
	}
	var members map[string]span
	if err := json.Unmarshal(raw, &members); err != nil {
		return body, err
	}
	for _, k := range slices.Sorted(maps.Keys(members)) { // the same error for the same body
		v := members[k]
		var err error
		switch k {
		case "types":
			err = json.Unmarshal(v, &body.Types)
		case "args":
			body.Args = v
		case "version":
			err = json.Unmarshal(v, &body.Version)
		case "group":
			err = json.Unmarshal(v, &body.Group)
		case "attachments":
			err = json.Unmarshal(v, &body.Attachments)
		default:
			return body, fmt.Errorf("unknown field %q", k)
		}
		if err != nil {
			return body, fmt.Errorf("%s: %w", k, err)
		}
	}
	return body, nil
}

func (h *Handler) servePassthrough(ctx context.Context, w http.ResponseWriter, r *http.Request, raw []byte) {
	iface, method := exchange.PathValue(r, "interface"), exchange.PathValue(r, "method")
	if !h.passthrough.allowed(iface) {
		exchange.Fail(w, r, exchange.CodeForbidden, "interface "+iface+" is not allowed on this route")
		return
	}
	if !protocol.JavaIdent(method) {
		h.badRequest(w, r, "method "+method+" is not a Java method name")
		return
	}
	if strings.HasPrefix(method, "$") {
		// $invoke, $invokeAsync, $echo...: Dubbo's own, whose arguments
		// name methods, classes and serializations.
		h.badRequest(w, r, "method "+method+": methods starting with $ are Dubbo's own and cannot be called here")
		return
	}
	body, err := parsePassthrough(raw)
	if err != nil {
		h.badRequest(w, r, passthroughShape+": "+err.Error())
		return
	}
	if len(body.Types) > maxParams {
		h.badRequest(w, r, "types: "+strconv.Itoa(len(body.Types))+" parameters; a Java method has at most 255")
		return
	}
	types := make([]*jsonbridge.Type, len(body.Types))
	names := make([]string, len(body.Types))
	for i, t := range body.Types {
		if types[i], err = h.enc.ClientType(t); err != nil {
			h.badRequest(w, r, "types["+strconv.Itoa(i)+"]: "+err.Error())
			return
		}
		names[i] = erase(t)
	}
	args := []byte(body.Args)
	if t := bytes.TrimSpace(args); len(t) == 0 || string(t) == "null" {
		args = []byte("[]")
	}
	tag, terr := h.requestTag(r)
	if terr != nil {
		h.badRequest(w, r, terr.msg)
		return
	}
	atts := h.attachments(r, tag)
	if len(body.Attachments) > 0 {
		for _, k := range slices.Sorted(maps.Keys(body.Attachments)) {
			if msg := h.clientAttachment(k); msg != "" {
				h.badRequest(w, r, "attachments."+k+": "+msg)
				return
			}
			atts[k] = body.Attachments[k]
		}
	}
	if info := exchange.From(r.Context()); info != nil {
		for k, v := range info.Attachments {
			atts[k] = v // identity from the auth filter: a client cannot send another user's
		}
	}
	inv := &dubbo.Invocation{
		Interface: iface, Version: body.Version, Group: body.Group, Method: method,
		ParamTypes: names, Generic: *h.cfg.Generic, Async: h.cfg.Async, Attachments: atts,
		// The client writes the arguments before sending anything: a mismatch
		// fails the call unsent, and argError makes it a 400, never retried.
		WriteArgs: func(e *hessian.Encoder) error {
			if err := h.enc.EncodeArgsContext(ctx, e, args, types); err != nil {
				if isContextErr(err) {
					return err // the deadline passed: a 504, not the client's mistake
				}
				return &argError{msg: "args: " + err.Error()}
			}
			return nil
		},
	}
	key := registry.ServiceKey{Interface: iface, Group: body.Group, Version: body.Version}
	// Waiting for the registry's catalog (only while it is first read) is
	// bounded by the route's deadline (ctx), as waiting for a directory is.
	ref, err := h.passthrough.refs.OnDemand(ctx, registry.RefKey{Service: key, Timeout: h.timeout})
	switch {
	case errors.Is(err, registry.ErrNotRegistered):
		// As for a subscribed service without provider: clients need not
		// tell the two apart (dubbogw_references_refused_total does).
		exchange.Fail(w, r, exchange.CodeNoProvider, "no provider for "+key.String())
		return
	case err != nil:
		exchange.Fail(w, r, exchange.CodeSubscribeLimit,
			"cannot subscribe to "+key.String()+" now: "+err.Error()+"; retry later")
		return
	case ref == nil: // the registry is being replaced by a reload
		exchange.Fail(w, r, exchange.CodeNoProvider, "the registry is closing; retry")
		return
	}
	hashKey := ""
	if h.cfg.LoadBalance == cluster.PolicyConsistentHash {
		hashKey = string(args)
	}
	h.call(ctx, w, r, ref.Dir, inv, hashKey, tag, nil)
}

// clientAttachment says why a client may not send attachment key ("" when
// it may): only the route's allow-list passes, and never a key Dubbo
// reserves (config validation refuses those, and identity keys, in the
// list).
func (h *Handler) clientAttachment(k string) string {
	switch {
	case protocol.ReservedAttachment(k):
		return "a key Dubbo reserves; a client may never set it"
	case !slices.Contains(h.passthrough.attachments, k):
		if len(h.passthrough.attachments) == 0 {
			return "this route takes no attachments from clients"
		}
		return "not allowed on this route (allowed: " + strings.Join(h.passthrough.attachments, ", ") + ")"
	}
	return ""
}

// badRequest answers 400 BAD_REQUEST with msg and logs it (bounded).
func (h *Handler) badRequest(w http.ResponseWriter, r *http.Request, msg string) {
	h.refuse(r, msg)
	exchange.Fail(w, r, exchange.CodeBadRequest, msg)
}
