package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// This file parses the application instances Dubbo 3 registers for
// application-level service discovery, without any I/O: the ZooKeeper
// worker reads /services/<app>/<ip:port> and hands the node's data to
// ParseInstance. Under a registry group, dubbo-go keeps the instances and
// the remote metadata of an application under the same parent
// (/<group>/<app>/<ip:port> and /<group>/<app>/<revision>): ParseInstance
// refuses a metadata document (it has no name) and ParseMetadataJSON an
// instance (it has no revision).

// Keys of an instance's payload.metadata that application-level discovery
// reads (Dubbo's ServiceInstanceMetadataUtils names them the same).
const (
	appdiscMetaRevision    = "dubbo.metadata.revision"
	appdiscMetaStorageType = "dubbo.metadata.storage-type"
	appdiscMetaEndpoints   = "dubbo.endpoints"
	appdiscMetaURLParams   = "dubbo.metadata-service.url-params"
)

// The values of Instance.StorageType.
const (
	StorageLocal  = "local"  // metadata served by the instance's MetadataService
	StorageRemote = "remote" // metadata published to the metadata report (ZooKeeper)
)

// appdiscMetadataServiceVersion is the version Dubbo exports its
// MetadataService under.
const appdiscMetadataServiceVersion = "1.0.0"

// MaxInstanceBytes is the largest instance document ParseInstance reads;
// ZooKeeper's own node limit (jute.maxbuffer) is about 1 MiB by default.
const MaxInstanceBytes = 1 << 20

// appdiscMaxEndpoints bounds the entries of dubbo.endpoints: one per protocol.
const appdiscMaxEndpoints = 64

// Instance is one application instance as registered under
// /services/<app>/<ip:port>, or /<registry group>/<app>/<ip:port> (Curator's
// service-instance JSON: name, id, address, port, payload.metadata; other
// fields ignored).
type Instance struct {
	// App is the application (name), ID the instance's id (id: "" or, as
	// written by Dubbo, host:port like the node's name), Host the address
	// its services listen on (address: a host name or an IP address).
	App, ID, Host string
	// Port is the node's own port. It may belong to another protocol than
	// dubbo and is never used as a service port.
	Port int
	// Revision is payload.metadata["dubbo.metadata.revision"], "" when
	// absent. It names the MetadataInfo the instance serves; RevisionKnown
	// tells whether there is any to fetch.
	Revision string
	// StorageType is where the instance's MetadataInfo lives: "local" (ask
	// the instance's MetadataService) or "remote" (read the metadata report).
	// As in Java Dubbo, anything but "remote" (in any case) means local.
	StorageType string
	// Endpoints are the instance's protocols and their ports, from
	// "dubbo.endpoints" (a JSON list in a string), in the order given.
	Endpoints []Endpoint
	// MetadataService is the instance's MetadataService, from
	// "dubbo.metadata-service.url-params" (flat in Dubbo 3, nested per
	// protocol in Dubbo 2.7: then the dubbo one). Zero when absent.
	MetadataService MetadataServiceParams
	// Metadata is payload.metadata as is: strings as they are, numbers and
	// booleans as their JSON text, objects and lists as compact JSON; null
	// values are left out.
	Metadata map[string]string
}

// Endpoint is one protocol an instance serves, and its port.
type Endpoint struct {
	Port     int
	Protocol string
}

// MetadataServiceParams describes an instance's MetadataService as its
// url-params publish it. Port is 0 and the strings empty when not given.
type MetadataServiceParams struct {
	Protocol      string
	Port          int
	Group         string
	Version       string
	Serialization string
	// Params holds every parameter given, as strings (port included).
	Params map[string]string
}

// appdiscCurator is the part of Curator's service-instance JSON read here.
type appdiscCurator struct {
	Name    json.RawMessage `json:"name"`
	ID      json.RawMessage `json:"id"`
	Address json.RawMessage `json:"address"`
	Port    json.RawMessage `json:"port"`
	Payload json.RawMessage `json:"payload"`
}

type appdiscCuratorPayload struct {
	Metadata json.RawMessage `json:"metadata"`
}

// ParseInstance parses the data of an instance node. It fails, naming the
// field, on malformed JSON, a missing name or address, a value of the wrong
// type, a port out of range, or malformed dubbo.endpoints or url-params;
// it does not require a revision (see RevisionKnown).
func ParseInstance(data []byte) (*Instance, error) { return parseInstance(data, true) }

// parseInstance is ParseInstance; without fast it always takes the
// precise path (tests compare the two).
func parseInstance(data []byte, fast bool) (*Instance, error) {
	if len(data) > MaxInstanceBytes {
		return nil, fmt.Errorf("service instance: %d bytes, over the limit of %d", len(data), MaxInstanceBytes)
	}
	var err error
	var ci appdiscCurator
	var port int
	in, port, isFast := (*Instance)(nil), 0, false
	if fast {
		in, port, isFast = scanInstance(data)
	}
	if !isFast {
		in = &Instance{}
		if err := appdiscObject(data, &ci); err != nil {
			return nil, fmt.Errorf("service instance: %w", err)
		}
		if in.App, err = appdiscString(ci.Name); err != nil {
			return nil, fmt.Errorf("service instance: name: %w", err)
		}
		if in.ID, err = appdiscString(ci.ID); err != nil {
			return nil, fmt.Errorf("service instance %q: id: %w", in.App, err)
		}
		if in.Host, err = appdiscString(ci.Address); err != nil {
			return nil, fmt.Errorf("service instance %q: address: %w", in.App, err)
		}
	}
	if in.App == "" {
		return nil, errors.New("service instance: no name")
	}
	if in.Host == "" {
		return nil, fmt.Errorf("service instance %q: no address", in.App)
	}
	if err := appdiscCheckHost(in.Host); err != nil {
		return nil, fmt.Errorf("service instance %q: address %q: %w", in.App, in.Host, err)
	}
	if in.Port = port; !isFast {
		if in.Port, err = appdiscPort(ci.Port); err != nil {
			return nil, fmt.Errorf("service instance %q %s: port: %w", in.App, in.Host, err)
		}
		if in.Metadata, err = appdiscPayload(ci.Payload); err != nil {
			return nil, fmt.Errorf("service instance %q %s: %w", in.App, in.Host, err)
		}
	}
	in.Revision = in.Metadata[appdiscMetaRevision]
	in.StorageType = StorageLocal
	if strings.EqualFold(in.Metadata[appdiscMetaStorageType], StorageRemote) {
		in.StorageType = StorageRemote
	}
	if in.Endpoints, err = appdiscEndpoints(in.Metadata[appdiscMetaEndpoints], fast); err != nil {
		return nil, fmt.Errorf("service instance %q %s: payload.metadata[%q]: %w", in.App, in.Host, appdiscMetaEndpoints, err)
	}
	if in.MetadataService, err = appdiscMetadataServiceParams(in.Metadata[appdiscMetaURLParams], fast); err != nil {
		return nil, fmt.Errorf("service instance %q %s: payload.metadata[%q]: %w", in.App, in.Host, appdiscMetaURLParams, err)
	}
	return in, nil
}

// RevisionKnown reports whether Revision names metadata worth fetching: it
// is not empty, nor Dubbo's empty revision "0", nor dubbo-go's "N/A" (both
// written when the instance exports no service).
func (in *Instance) RevisionKnown() bool {
	return in.Revision != "" && in.Revision != "0" && in.Revision != "N/A"
}

// MetadataServiceAddr is host:port of the instance's MetadataService over
// the dubbo protocol: the url-params port, else the dubbo endpoint's port.
// It fails when neither is known, or when the url-params name another
// protocol than dubbo (none named means dubbo, Dubbo's default).
func (in *Instance) MetadataServiceAddr() (string, error) {
	ms := &in.MetadataService
	if ms.Protocol != "" && ms.Protocol != "dubbo" {
		return "", fmt.Errorf("instance %s of %q: MetadataService speaks %q, not dubbo", in.Host, in.App, ms.Protocol)
	}
	port := ms.Port
	if port == 0 {
		port = in.EndpointPort("dubbo")
	}
	if port == 0 {
		return "", fmt.Errorf("instance %s of %q: no MetadataService port: neither %s nor a dubbo endpoint gives one", in.Host, in.App, appdiscMetaURLParams)
	}
	return net.JoinHostPort(in.Host, strconv.Itoa(port)), nil
}

// MetadataServiceGroup is the MetadataService's group: the url-params
// group, else the application name (what Dubbo exports it under).
func (in *Instance) MetadataServiceGroup() string {
	if in.MetadataService.Group != "" {
		return in.MetadataService.Group
	}
	return in.App
}

// MetadataServiceVersion is the MetadataService's version: the url-params
// version, else "1.0.0" (the version Dubbo exports it under).
func (in *Instance) MetadataServiceVersion() string {
	if in.MetadataService.Version != "" {
		return in.MetadataService.Version
	}
	return appdiscMetadataServiceVersion
}

// EndpointPort is the port of protocol among Endpoints (the first one
// listed), 0 when none.
func (in *Instance) EndpointPort(protocol string) int {
	for _, e := range in.Endpoints {
		if e.Protocol == protocol {
			return e.Port
		}
	}
	return 0
}

// appdiscPayload returns payload.metadata as strings; an absent or null
// payload or metadata is an empty map.
func appdiscPayload(raw json.RawMessage) (map[string]string, error) {
	var p appdiscCuratorPayload
	if !appdiscNull(raw) {
		if err := appdiscObject(raw, &p); err != nil {
			return nil, fmt.Errorf("payload: %w", err)
		}
	}
	if appdiscNull(p.Metadata) {
		return map[string]string{}, nil
	}
	var m map[string]json.RawMessage
	if err := appdiscObject(p.Metadata, &m); err != nil {
		return nil, fmt.Errorf("payload.metadata: %w", err)
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		s, null, err := appdiscText(v)
		if err != nil {
			return nil, fmt.Errorf("payload.metadata[%q]: %w", k, err)
		}
		if !null {
			out[k] = s
		}
	}
	return out, nil
}

// appdiscEndpoints parses dubbo.endpoints: [{"port":20880,"protocol":"dubbo"}, ...];
// with fast, in one pass when it has that shape.
func appdiscEndpoints(s string, fast bool) ([]Endpoint, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	if fast {
		if out, ok := scanEndpoints(s); ok {
			return out, nil
		}
	}
	var raw []struct {
		Port     json.RawMessage `json:"port"`
		Protocol json.RawMessage `json:"protocol"`
	}
	if err := appdiscUnmarshal([]byte(s), &raw, '['); err != nil {
		return nil, err
	}
	if len(raw) > appdiscMaxEndpoints {
		return nil, fmt.Errorf("%d endpoints, over the limit of %d", len(raw), appdiscMaxEndpoints)
	}
	out := make([]Endpoint, 0, len(raw))
	for i, r := range raw {
		proto, err := appdiscString(r.Protocol)
		if err != nil {
			return nil, fmt.Errorf("endpoint %d: protocol: %w", i, err)
		}
		port, err := appdiscPort(r.Port)
		if err != nil {
			return nil, fmt.Errorf("endpoint %d: port: %w", i, err)
		}
		if proto == "" || port == 0 {
			return nil, fmt.Errorf("endpoint %d: want a protocol and a port, got %q and %d", i, proto, port)
		}
		out = append(out, Endpoint{Port: port, Protocol: proto})
	}
	return out, nil
}

// appdiscMetadataServiceParams parses dubbo.metadata-service.url-params:
// flat {"port":"20881","protocol":"dubbo","version":"1.0.0",...} as Dubbo 3
// writes it, or nested per protocol {"dubbo":{"port":"20881",...}} as Dubbo
// 2.7 does. Of a nested one it takes the dubbo entry, else the first by
// name (so that a protocol the gateway cannot speak shows).
// With fast, a flat one of strings is read in one pass.
func appdiscMetadataServiceParams(s string, fast bool) (MetadataServiceParams, error) {
	var ms MetadataServiceParams
	if strings.TrimSpace(s) == "" {
		return ms, nil
	}
	if fast {
		if ms, ok := scanMetadataServiceParams(s); ok {
			return ms, nil
		}
	}
	var top map[string]json.RawMessage
	if err := appdiscObject([]byte(s), &top); err != nil {
		return ms, err
	}
	flat, nestedKey := top, ""
	for k, v := range top {
		if appdiscFirst(v) == '{' && (nestedKey == "" || k == "dubbo" || (nestedKey != "dubbo" && k < nestedKey)) {
			nestedKey = k
		}
	}
	if nestedKey != "" {
		flat = nil
		if err := appdiscObject(top[nestedKey], &flat); err != nil {
			return ms, fmt.Errorf("%q: %w", nestedKey, err)
		}
	}
	ms.Params = make(map[string]string, len(flat))
	for k, v := range flat {
		text, null, err := appdiscText(v)
		if c := appdiscFirst(v); err != nil || c == '[' || c == '{' {
			return ms, fmt.Errorf("%q: want a string or a number", k)
		}
		if !null {
			ms.Params[k] = text
		}
	}
	ms.Protocol = ms.Params["protocol"]
	if ms.Protocol == "" && nestedKey != "" {
		ms.Protocol = nestedKey
	}
	ms.Group = ms.Params["group"]
	ms.Version = ms.Params["version"]
	ms.Serialization = ms.Params["serialization"]
	if p := ms.Params["port"]; p != "" {
		n, err := appdiscPortText(p)
		if err != nil {
			return ms, fmt.Errorf("port: %w", err)
		}
		ms.Port = n
	}
	return ms, nil
}

// appdiscCheckHost accepts a host name or an IP address (IPv6 without
// brackets), as Curator's address field holds it. IPv6 zones are refused:
// a link-local address means nothing to another host.
func appdiscCheckHost(h string) error {
	if len(h) > 255 {
		return errors.New("too long for a host")
	}
	if strings.Contains(h, ":") {
		if net.ParseIP(h) == nil {
			return errors.New("not a host name or an IP address")
		}
		return nil
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_') {
			return errors.New("not a host name or an IP address")
		}
	}
	return nil
}

// appdiscObject decodes data, which must hold a JSON object, into v.
func appdiscObject(data []byte, v any) error { return appdiscUnmarshal(data, v, '{') }

// appdiscUnmarshal decodes data into v after checking that it starts as
// wanted ('{' or '['), so that the error for a scalar reads plainly.
func appdiscUnmarshal(data []byte, v any, want byte) error {
	got := appdiscFirst(data)
	if got != want {
		kind := "object"
		if want == '[' {
			kind = "list"
		}
		return fmt.Errorf("want a JSON %s, got %s", kind, appdiscDescribe(data))
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("malformed JSON: %w", err)
	}
	return nil
}

// appdiscDescribe names what data starts with, for an error.
func appdiscDescribe(data []byte) string {
	switch c := appdiscFirst(data); {
	case c == 0:
		return "nothing"
	case c == '{':
		return "an object"
	case c == '[':
		return "a list"
	case c == '"':
		return "a string"
	case bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("null")):
		return "null"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == '-' || '0' <= c && c <= '9':
		return "a number"
	}
	return "something else"
}

// appdiscFirst is the first non-space byte of data, 0 when none.
func appdiscFirst(data []byte) byte {
	data = bytes.TrimLeft(data, " \t\r\n")
	if len(data) == 0 {
		return 0
	}
	return data[0]
}

func appdiscNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// appdiscString reads a JSON string; absent or null is "".
func appdiscString(raw json.RawMessage) (string, error) {
	if appdiscNull(raw) {
		return "", nil
	}
	if appdiscFirst(raw) != '"' {
		return "", fmt.Errorf("want a string, got %s", appdiscDescribe(raw))
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", err
	}
	return s, nil
}

// appdiscText reads any JSON value as text: a string's value, the literal of
// a number or boolean, the compact JSON of an object or list; null reports
// null. raw comes from a decoded document, so it is valid JSON.
func appdiscText(raw json.RawMessage) (s string, null bool, err error) {
	switch c := appdiscFirst(raw); {
	case appdiscNull(raw):
		return "", true, nil
	case c == '"':
		s, err = appdiscString(raw)
		return s, false, err
	case c == '{' || c == '[':
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return "", false, err
		}
		return b.String(), false, nil
	}
	return string(bytes.TrimSpace(raw)), false, nil
}

// appdiscPort reads a port written as a JSON number or string (Curator writes
// numbers, Dubbo's url-params strings): 0 when absent, null, "" or -1
// (Java's "unset"), an error when not an integer in 0..65535.
func appdiscPort(raw json.RawMessage) (int, error) {
	if appdiscNull(raw) {
		return 0, nil
	}
	c := appdiscFirst(raw)
	if c != '"' && c != '-' && (c < '0' || c > '9') {
		return 0, fmt.Errorf("want a number, got %s", appdiscDescribe(raw))
	}
	s, _, err := appdiscText(raw)
	if err != nil {
		return 0, err
	}
	if s == "" {
		return 0, nil
	}
	return appdiscPortText(s)
}

// appdiscPortText parses a port's decimal text; -1 (Java's "unset") is 0.
func appdiscPortText(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < -1 || n > 65535 {
		if len(s) > 32 {
			s = s[:32] + "..."
		}
		return 0, fmt.Errorf("%q is not a port", s)
	}
	return max(n, 0), nil
}

// appdiscSortedKeys returns m's keys in order.
func appdiscSortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
