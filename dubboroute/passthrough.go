package dubboroute

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/dubbo"
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
// limits answer 503 SUBSCRIBE_LIMITED.
type passthrough struct {
	exact    map[string]bool
	prefixes []string
	refs     *registry.References
}

func newPassthrough(allow []string, refs *registry.References) *passthrough {
	p := &passthrough{exact: map[string]bool{}, refs: refs}
	for _, a := range allow {
		if strings.HasSuffix(a, ".*") {
			p.prefixes = append(p.prefixes, strings.TrimSuffix(a, "*"))
		} else {
			p.exact[a] = true
		}
	}
	return p
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

type passthroughBody struct {
	Types       []string          `json:"types"`
	Args        json.RawMessage   `json:"args"`
	Version     string            `json:"version"`
	Group       string            `json:"group"`
	Attachments map[string]string `json:"attachments"`
}

func (h *Handler) servePassthrough(w http.ResponseWriter, r *http.Request) {
	iface, method := exchange.PathValue(r, "interface"), exchange.PathValue(r, "method")
	if !h.passthrough.allowed(iface) {
		exchange.WriteError(w, r, http.StatusForbidden, exchange.CodeForbidden, "interface "+iface+" is not allowed on this route")
		return
	}
	if !config.JavaIdent(method) {
		exchange.WriteError(w, r, http.StatusBadRequest, exchange.CodeBadRequest, "method "+method+" is not a Java method name")
		return
	}
	raw, err := readBody(r)
	if err != nil {
		h.writeErr(w, r, err)
		return
	}
	var body passthroughBody
	if len(strings.TrimSpace(string(raw))) > 0 {
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil {
			exchange.WriteError(w, r, http.StatusBadRequest, exchange.CodeBadRequest,
				`the body must be {"types": [...], "args": [...], "version", "group", "attachments"}: `+err.Error())
			return
		}
	}
	types := make([]*jsonbridge.Type, len(body.Types))
	names := make([]string, len(body.Types))
	for i, t := range body.Types {
		if types[i], err = h.enc.Type(t); err != nil {
			exchange.WriteError(w, r, http.StatusBadRequest, exchange.CodeBadRequest, "types["+strconv.Itoa(i)+"]: "+err.Error())
			return
		}
		names[i] = erase(t)
	}
	args := []byte(body.Args)
	if len(strings.TrimSpace(string(args))) == 0 || string(args) == "null" {
		args = []byte("[]")
	}
	atts := h.attachments(r)
	for k, v := range body.Attachments {
		atts[k] = v
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
			if err := h.enc.EncodeArgs(e, args, types); err != nil {
				return &argError{msg: "args: " + err.Error()}
			}
			return nil
		},
	}
	key := registry.ServiceKey{Interface: iface, Group: body.Group, Version: body.Version}
	// Waiting for the registry's catalog (only while it is first read) is
	// bounded by the call's timeout, as waiting for a directory is.
	ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
	ref, err := h.passthrough.refs.OnDemand(ctx, registry.RefKey{Service: key, Timeout: h.timeout})
	cancel()
	switch {
	case errors.Is(err, registry.ErrNotRegistered):
		// As for a subscribed service without provider: clients need not
		// tell the two apart (dubbogw_references_refused_total does).
		exchange.WriteError(w, r, http.StatusServiceUnavailable, exchange.CodeNoProvider, "no provider for "+key.String())
		return
	case err != nil:
		w.Header().Set("Retry-After", "1")
		exchange.WriteError(w, r, http.StatusServiceUnavailable, exchange.CodeSubscribeLimit,
			"cannot subscribe to "+key.String()+" now: "+err.Error()+"; retry later")
		return
	case ref == nil: // the registry is being replaced by a reload
		exchange.WriteError(w, r, http.StatusServiceUnavailable, exchange.CodeNoProvider, "the registry is closing; retry")
		return
	}
	h.call(w, r, ref.Dir, inv, string(args))
}
