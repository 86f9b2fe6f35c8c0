package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"strconv"

	"github.com/dubbogw/dubbogw/cluster"
	"github.com/dubbogw/dubbogw/hessian"
)

// This file parses what an application revision serves (Dubbo's
// MetadataInfo), from a remote metadata node's JSON or from the answer of
// MetadataService.getMetadataInfo, and turns it into provider URLs, without
// any I/O.

// Java class names of the MetadataService answer.
const (
	appdiscMetadataInfoClass = "org.apache.dubbo.metadata.MetadataInfo"
	appdiscServiceInfoClass  = "org.apache.dubbo.metadata.MetadataInfo$ServiceInfo"
)

// MaxMetadataBytes is the largest remote metadata document
// ParseMetadataJSON reads.
const MaxMetadataBytes = 8 << 20

// MetadataInfo is org.apache.dubbo.metadata.MetadataInfo: what an
// application revision serves.
type MetadataInfo struct {
	App, Revision string
	// Services are keyed as the document keys them, which Dubbo builds as
	// [group/]interface[:version]:protocol. Never nil; null entries are
	// left out.
	Services map[string]*ServiceInfo
}

// ServiceInfo is org.apache.dubbo.metadata.MetadataInfo$ServiceInfo: one
// service of a MetadataInfo. Port is 0 when not given (Java Dubbo before
// 3.2 and dubbo-go leave it out or write -1 or 0). Params is never nil.
type ServiceInfo struct {
	Name, Group, Version, Protocol, Path string
	Port                                 int
	// Params are compact (interned pairs): a registry keeps the metadata
	// of every application revision in use, 10,000 services' worth at
	// 500 applications × 10 services × 2 revisions.
	Params cluster.Params
}

// MetadataFetcher calls an instance's MetadataService:
// getMetadataInfo(inst.Revision) on inst.MetadataServiceAddr(), group
// inst.MetadataServiceGroup(), version 1.0.0. It must return by ctx's
// deadline. A registry doing application-level discovery uses one for the
// instances that keep their metadata themselves (storage "local");
// dubbo/metadataservice provides it over the gateway's Dubbo client.
type MetadataFetcher func(ctx context.Context, inst *Instance) (*MetadataInfo, error)

// Key is the service key the service answers to: its name (the interface)
// with its group and version.
func (s *ServiceInfo) Key() ServiceKey {
	return ServiceKey{Interface: s.Name, Group: s.Group, Version: s.Version}
}

// ParseMetadataJSON parses a remote metadata node (Java Dubbo writes
// /<root>/metadata/<app>/<revision>, dubbo-go /<root>/<app>/<revision>).
// It reads both writers' JSON: app, revision and services, each service's
// name, group, version, protocol, port (a number or a string), path and
// params; other fields (dubbo-go's Tag, the getters fastjson writes) are
// ignored. A document without a revision is an error: every writer sets
// one, and an instance node (which may share the parent node, under a
// registry group) has none. Errors name the service and field.
func ParseMetadataJSON(data []byte) (*MetadataInfo, error) {
	if len(data) > MaxMetadataBytes {
		return nil, fmt.Errorf("metadata: %d bytes, over the limit of %d", len(data), MaxMetadataBytes)
	}
	if m, ok := parseMetadataStrings(data); ok {
		return m, nil
	}
	return parseMetadataJSON(data)
}

// parseMetadataStrings parses a document of the usual shape in one pass
// (scanMetadata), and reports false for any other (or a wrong one), which
// parseMetadataJSON then parses, or names what is wrong with.
func parseMetadataStrings(data []byte) (*MetadataInfo, bool) {
	m, ok := scanMetadata(data)
	if !ok || m.Revision == "" {
		return nil, false
	}
	return m, true
}

// parseMetadataJSON is ParseMetadataJSON for any document: level by level,
// naming the service and field of an error.
func parseMetadataJSON(data []byte) (*MetadataInfo, error) {
	var doc struct {
		App      json.RawMessage `json:"app"`
		Revision json.RawMessage `json:"revision"`
		Services json.RawMessage `json:"services"`
	}
	if err := appdiscObject(data, &doc); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	m := &MetadataInfo{}
	var err error
	if m.App, err = appdiscString(doc.App); err != nil {
		return nil, fmt.Errorf("metadata: app: %w", err)
	}
	if m.Revision, err = appdiscText1(doc.Revision); err != nil {
		return nil, fmt.Errorf("metadata of %q: revision: %w", m.App, err)
	}
	if m.Revision == "" {
		return nil, fmt.Errorf("metadata of %q: no revision", m.App)
	}
	var services map[string]json.RawMessage
	if !appdiscNull(doc.Services) {
		if err := appdiscObject(doc.Services, &services); err != nil {
			return nil, fmt.Errorf("metadata of %q: services: %w", m.App, err)
		}
	}
	m.Services = make(map[string]*ServiceInfo, len(services))
	for key, raw := range services {
		if appdiscNull(raw) {
			continue
		}
		s, err := appdiscServiceJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("metadata of %q: service %q: %w", m.App, key, err)
		}
		m.Services[key] = s
	}
	return m, nil
}

func appdiscServiceJSON(data json.RawMessage) (*ServiceInfo, error) {
	var doc struct {
		Name     json.RawMessage `json:"name"`
		Group    json.RawMessage `json:"group"`
		Version  json.RawMessage `json:"version"`
		Protocol json.RawMessage `json:"protocol"`
		Port     json.RawMessage `json:"port"`
		Path     json.RawMessage `json:"path"`
		Params   json.RawMessage `json:"params"`
	}
	if err := appdiscObject(data, &doc); err != nil {
		return nil, err
	}
	s := &ServiceInfo{}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		dst  *string
	}{
		{"name", doc.Name, &s.Name},
		{"group", doc.Group, &s.Group},
		{"version", doc.Version, &s.Version},
		{"protocol", doc.Protocol, &s.Protocol},
		{"path", doc.Path, &s.Path},
	} {
		v, err := appdiscString(f.raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		*f.dst = v
	}
	var err error
	if s.Port, err = appdiscPort(doc.Port); err != nil {
		return nil, fmt.Errorf("port: %w", err)
	}
	var params map[string]json.RawMessage
	if !appdiscNull(doc.Params) {
		if err := appdiscObject(doc.Params, &params); err != nil {
			return nil, fmt.Errorf("params: %w", err)
		}
	}
	kept := make(map[string]string, len(params))
	for k, raw := range params {
		v, null, err := appdiscText(raw)
		if c := appdiscFirst(raw); err != nil || c == '{' || c == '[' {
			return nil, fmt.Errorf("params[%q]: want a string, got %s", k, appdiscDescribe(raw))
		}
		if !null {
			kept[k] = v
		}
	}
	s.Params = cluster.NewParams(kept)
	return s, nil
}

// appdiscText1 reads a string, or a number as its text (a revision is a
// string, but dubbo-go's is all digits); null is "".
func appdiscText1(raw json.RawMessage) (string, error) {
	switch c := appdiscFirst(raw); {
	case appdiscNull(raw):
		return "", nil
	case c == '"' || c == '-' || '0' <= c && c <= '9':
		s, _, err := appdiscText(raw)
		return s, err
	}
	return "", fmt.Errorf("want a string, got %s", appdiscDescribe(raw))
}

// MetadataFromHessian converts the decoded answer of
// MetadataService.getMetadataInfo: an object of class
// org.apache.dubbo.metadata.MetadataInfo {app, revision, services} whose
// services map holds org.apache.dubbo.metadata.MetadataInfo$ServiceInfo
// objects {name, group, version, protocol, port, path, params}. Maps are
// accepted in place of objects (of any type name); other fields are
// ignored; port may be an int, a long or a string. It fails on null (the
// answer for an unknown revision), on an object of another class, on a
// field of the wrong type, and without a revision.
func MetadataFromHessian(v any) (*MetadataInfo, error) {
	get, err := appdiscFields(v, appdiscMetadataInfoClass)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	m := &MetadataInfo{}
	if m.App, err = appdiscHessianString(get, "app"); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	if m.Revision, err = appdiscHessianString(get, "revision"); err != nil {
		return nil, fmt.Errorf("metadata of %q: %w", m.App, err)
	}
	if m.Revision == "" {
		return nil, fmt.Errorf("metadata of %q: no revision", m.App)
	}
	sv, _ := get("services")
	var services *hessian.Map
	switch x := sv.(type) {
	case nil:
	case *hessian.Map:
		services = x
	default:
		return nil, fmt.Errorf("metadata of %q: services: got %s, want a map", m.App, appdiscHessianType(sv))
	}
	if services == nil {
		m.Services = map[string]*ServiceInfo{}
		return m, nil
	}
	m.Services = make(map[string]*ServiceInfo, len(services.Entries))
	for i, e := range services.Entries {
		key, ok := e.Key.(string)
		if !ok {
			return nil, fmt.Errorf("metadata of %q: services: key %d: got %s, want a string", m.App, i, appdiscHessianType(e.Key))
		}
		if e.Value == nil {
			continue
		}
		s, err := appdiscServiceHessian(e.Value)
		if err != nil {
			return nil, fmt.Errorf("metadata of %q: service %q: %w", m.App, key, err)
		}
		m.Services[key] = s
	}
	return m, nil
}

func appdiscServiceHessian(v any) (*ServiceInfo, error) {
	get, err := appdiscFields(v, appdiscServiceInfoClass)
	if err != nil {
		return nil, err
	}
	s := &ServiceInfo{}
	for _, f := range []struct {
		name string
		dst  *string
	}{
		{"name", &s.Name},
		{"group", &s.Group},
		{"version", &s.Version},
		{"protocol", &s.Protocol},
		{"path", &s.Path},
	} {
		if *f.dst, err = appdiscHessianString(get, f.name); err != nil {
			return nil, err
		}
	}
	pv, _ := get("port")
	switch p := pv.(type) {
	case nil:
	case int32:
		s.Port, err = appdiscPortInt(int64(p))
	case int64:
		s.Port, err = appdiscPortInt(p)
	case string:
		if p != "" {
			s.Port, err = appdiscPortText(p)
		}
	default:
		err = fmt.Errorf("got %s, want an int", appdiscHessianType(pv))
	}
	if err != nil {
		return nil, fmt.Errorf("port: %w", err)
	}
	prm, _ := get("params")
	switch p := prm.(type) {
	case nil:
	case *hessian.Map:
		kept := make(map[string]string, len(p.Entries))
		for i, e := range p.Entries {
			k, ok := e.Key.(string)
			if !ok {
				return nil, fmt.Errorf("params: key %d: got %s, want a string", i, appdiscHessianType(e.Key))
			}
			val, ok := appdiscHessianScalar(e.Value)
			if !ok {
				return nil, fmt.Errorf("params[%q]: got %s, want a string", k, appdiscHessianType(e.Value))
			}
			if e.Value != nil {
				kept[k] = val
			}
		}
		s.Params = cluster.NewParams(kept)
	default:
		return nil, fmt.Errorf("params: got %s, want a map", appdiscHessianType(prm))
	}
	return s, nil
}

// appdiscFields returns a lookup of v's fields: v is an *hessian.Object of
// class, or an *hessian.Map keyed by field name.
func appdiscFields(v any, class string) (func(string) (any, bool), error) {
	switch x := v.(type) {
	case *hessian.Object:
		if x.Class != class {
			return nil, fmt.Errorf("got an object of class %q, want %s", x.Class, class)
		}
		return x.Get, nil
	case *hessian.Map:
		return func(k string) (any, bool) { return x.Get(k) }, nil
	case nil:
		return nil, errors.New("got null, want " + class)
	}
	return nil, fmt.Errorf("got %s, want %s", appdiscHessianType(v), class)
}

// appdiscHessianString reads the string field name: absent or null is "".
func appdiscHessianString(get func(string) (any, bool), name string) (string, error) {
	v, _ := get(name)
	switch s := v.(type) {
	case nil:
		return "", nil
	case string:
		return s, nil
	}
	return "", fmt.Errorf("%s: got %s, want a string", name, appdiscHessianType(v))
}

// appdiscHessianScalar renders a string, number or boolean as text; null is
// "" and true.
func appdiscHessianScalar(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", true
	case string:
		return x, true
	case int32:
		return strconv.FormatInt(int64(x), 10), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case bool:
		return strconv.FormatBool(x), true
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", false
		}
		return strconv.FormatFloat(x, 'g', -1, 64), true
	}
	return "", false
}

func appdiscPortInt(n int64) (int, error) {
	if n < -1 || n > 65535 {
		return 0, fmt.Errorf("%d is not a port", n)
	}
	return int(max(n, 0)), nil
}

// appdiscHessianType names a decoded value's type for an error.
func appdiscHessianType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case *hessian.Object:
		return "an object of class " + strconv.Quote(x.Class)
	case *hessian.Map:
		return "a map"
	case *hessian.List:
		return "a list"
	case string:
		return "a string"
	case int32, int64:
		return "an int"
	case float64:
		return "a double"
	case bool:
		return "a boolean"
	case []byte:
		return "binary"
	}
	return fmt.Sprintf("%T", v)
}

// ProviderURLs returns a dubbo:// or tri:// ProviderURL for every service
// of m that inst offers over the dubbo or Triple protocol, in the order of
// their keys:
//   - Addr is inst.Host with the instance's own port of the service's
//     protocol, inst.EndpointPort(protocol), else ServiceInfo.Port; never inst.Port
//     (it can belong to another protocol). The instance's endpoints come
//     first because remote metadata is shared by every instance of a
//     revision: its ports are those of the instance that wrote it first
//     (dubbo-go creates the node once and never updates it);
//   - Interface is ServiceInfo.Name (the interface, which service keys
//     name), else Path;
//   - Params are ServiceInfo.Params, plus group, version and interface
//     (Name, else Path) from the fields where Params lacks them or has them
//     empty.
//
// Services of other protocols, or with no usable port or interface, are
// returned in skipped, one "key: reason" each. The URLs share nothing with
// m, so m may be cached while they are changed.
func (m *MetadataInfo) ProviderURLs(inst *Instance) (urls []*ProviderURL, skipped []string) {
	for _, o := range m.Offers() {
		if o.Skip != "" {
			skipped = append(skipped, o.Key+": "+o.Skip)
			continue
		}
		addr, ok := o.Addr(inst.Host, inst.EndpointPort(o.URL.Protocol))
		if !ok {
			skipped = append(skipped, o.Key+": "+NoPortReason)
			continue
		}
		u := *o.URL
		u.Addr = addr
		urls = append(urls, &u)
	}
	return urls, skipped
}

// NoPortReason is why an offer an instance cannot be reached at is
// skipped: Offer.Addr found no port.
const NoPortReason = "no port: the instance has no endpoint of the service's protocol and the service gives none"

// Offer is one service of a metadata revision, as every instance at that
// revision offers it: the provider URL but for its address, which is the
// instance's (Addr).
type Offer struct {
	Key string // the service's key in MetadataInfo.Services
	// Skip, when set, is why the service cannot be called: another
	// protocol, or no interface. URL is then nil.
	Skip string
	URL  *ProviderURL // Addr empty; shared: copy it to change it
	Port int          // the service's own port (ServiceInfo.Port)
}

// Offers returns every service of m in the order of their keys, as
// ProviderURLs describes them but for the address: what the instances of
// one revision share, so it can be worked out once for all of them.
func (m *MetadataInfo) Offers() []Offer {
	offers := make([]Offer, 0, len(m.Services))
	for _, key := range appdiscSortedKeys(m.Services) {
		s := m.Services[key]
		if s == nil {
			continue
		}
		o := Offer{Key: key, Port: s.Port}
		iface := s.Name
		if iface == "" {
			iface = s.Path
		}
		_, known := cluster.ParseProtocol(s.Protocol)
		switch {
		case !known:
			o.Skip = fmt.Sprintf("protocol %q: only dubbo and tri are spoken", s.Protocol)
		case iface == "":
			o.Skip = "no interface: neither path nor name is given"
		default:
			params := make(url.Values, s.Params.Len()+3)
			for k, v := range s.Params.All() {
				params[k] = []string{v}
			}
			appdiscDefault(params, "group", s.Group)
			appdiscDefault(params, "version", s.Version)
			appdiscDefault(params, "interface", iface)
			o.URL = &ProviderURL{Protocol: s.Protocol, Interface: iface, Params: params}
		}
		offers = append(offers, o)
	}
	return offers
}

// Addr is where an instance on host offers o: at its own endpoint's port
// for o's protocol (endpointPort, Instance.EndpointPort) when it has one, else
// at the service's port; false when neither is a port.
func (o *Offer) Addr(host string, endpointPort int) (string, bool) {
	port := endpointPort
	if port <= 0 {
		port = o.Port
	}
	if port <= 0 || port > 65535 {
		return "", false
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), true
}

// appdiscDefault sets params[k] to v when v is not empty and params has no
// non-empty value for k.
func appdiscDefault(params url.Values, k, v string) {
	if v != "" && params.Get(k) == "" {
		params[k] = []string{v}
	}
}
