package dubboroute

import (
	"container/list"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/dubbogw/dubbogw/config"
	"github.com/dubbogw/dubbogw/dubbo"
	"github.com/dubbogw/dubbogw/exchange"
	"github.com/dubbogw/dubbogw/hessian"
	"github.com/dubbogw/dubbogw/hessian/jsonbridge"
	"github.com/dubbogw/dubbogw/registry"
)

// maxPassthroughServices bounds the directories a pass-through route keeps:
// clients choose interface, version and group, so the set of service keys is
// theirs to grow; the least recently used is released beyond this.
const maxPassthroughServices = 256

// passthrough is the generic pass-through endpoint of a route:
// POST <prefix>/{interface}/{method} with
// {"types": [...], "args": [...], "version": "...", "group": "...", "attachments": {...}}.
type passthrough struct {
	exact    map[string]bool
	prefixes []string
	reg      registry.Registry

	mu   sync.Mutex
	dirs map[registry.ServiceKey]*list.Element // of *registry.Directory, most recent at the front
	lru  *list.List
}

func newPassthrough(allow []string, reg registry.Registry) *passthrough {
	p := &passthrough{exact: map[string]bool{}, reg: reg, dirs: map[registry.ServiceKey]*list.Element{}, lru: list.New()}
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

// directory returns the cached directory of key, subscribing on first use
// and releasing the least recently used beyond the bound.
func (p *passthrough) directory(key registry.ServiceKey) *registry.Directory {
	p.mu.Lock()
	defer p.mu.Unlock()
	if el, ok := p.dirs[key]; ok {
		p.lru.MoveToFront(el)
		return el.Value.(*registry.Directory)
	}
	d := p.reg.Subscribe(key)
	p.dirs[key] = p.lru.PushFront(d)
	for p.lru.Len() > maxPassthroughServices {
		old := p.lru.Back()
		od := old.Value.(*registry.Directory)
		p.lru.Remove(old)
		delete(p.dirs, od.Key())
		od.Release()
	}
	return d
}

func (p *passthrough) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, el := range p.dirs {
		el.Value.(*registry.Directory).Release()
	}
	p.dirs = map[registry.ServiceKey]*list.Element{}
	p.lru.Init()
}

type passthroughBody struct {
	Types       []string          `json:"types"`
	Args        json.RawMessage   `json:"args"`
	Version     string            `json:"version"`
	Group       string            `json:"group"`
	Attachments map[string]string `json:"attachments"`
}

func (h *Handler) servePassthrough(w http.ResponseWriter, r *http.Request) {
	iface, method := r.PathValue("interface"), r.PathValue("method")
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
	dir := h.passthrough.directory(registry.ServiceKey{Interface: iface, Group: body.Group, Version: body.Version})
	h.call(w, r, dir, inv, string(args))
}
