// Package peers holds the value table the hessian codec is proven against
// other Hessian 2.0 implementations with, and the language-neutral "typed
// JSON" description every peer reads and writes (README.md beside this file
// defines it).
//
// The tests in this folder drive hessian.js and Caucho Hessian through it;
// the separate module in test/interop drives Apache dubbo-go-hessian2.
package peers

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Desc describes one Hessian value, whatever language holds it.
type Desc struct {
	T string // null bool int long double date string binary list map object ref bigdecimal enum exception

	Bool   bool
	Int    int32
	Long   int64
	Double float64
	Date   int64  // milliseconds since the epoch, UTC
	Str    string // string value, bigdecimal digits, enum constant name, exception message
	Bin    []byte

	Type     string // list or map type, object, enum or exception class
	Items    []*Desc
	Entries  []Pair
	Fields   []NamedDesc
	Variable bool  // a list written without a length (x55/x57 ... Z)
	Cause    *Desc // exception cause, nil for none

	// ID names a list, map, object or enum so that a later {"t":"ref"} with
	// the same ID is the same value: a shared reference, or a cycle.
	ID string
}

// Pair is one map entry.
type Pair struct{ Key, Value *Desc }

// NamedDesc is one object field.
type NamedDesc struct {
	Name  string
	Value *Desc
}

// MarshalJSON writes the typed JSON of README.md.
func (d *Desc) MarshalJSON() ([]byte, error) {
	m := map[string]any{"t": d.T}
	if d.ID != "" {
		m["id"] = d.ID
	}
	switch d.T {
	case "null":
	case "bool":
		m["v"] = d.Bool
	case "int":
		m["v"] = d.Int
	case "long":
		m["v"] = strconv.FormatInt(d.Long, 10)
	case "double":
		m["v"] = doubleJSON(d.Double)
	case "date":
		m["v"] = d.Date
	case "string", "bigdecimal":
		m["v"] = d.Str
	case "binary":
		m["v"] = base64.StdEncoding.EncodeToString(d.Bin)
	case "list":
		m["type"] = d.Type
		m["items"] = nonNil(d.Items)
		if d.Variable {
			m["variable"] = true
		}
	case "map":
		m["type"] = d.Type
		entries := make([][2]*Desc, len(d.Entries))
		for i, e := range d.Entries {
			entries[i] = [2]*Desc{e.Key, e.Value}
		}
		m["entries"] = entries
	case "object":
		m["class"] = d.Type
		fields := make([][2]any, len(d.Fields))
		for i, f := range d.Fields {
			fields[i] = [2]any{f.Name, f.Value}
		}
		m["fields"] = fields
	case "enum":
		m["class"] = d.Type
		m["name"] = d.Str
	case "exception":
		m["class"] = d.Type
		m["message"] = d.Str
		m["cause"] = d.Cause
	case "ref":
	default:
		return nil, fmt.Errorf("describing a value: unknown type %q", d.T)
	}
	return json.Marshal(m)
}

func nonNil(items []*Desc) []*Desc {
	if items == nil {
		return []*Desc{}
	}
	return items
}

func doubleJSON(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return f
}

// UnmarshalJSON reads the typed JSON of README.md.
func (d *Desc) UnmarshalJSON(data []byte) error {
	var raw struct {
		T        string               `json:"t"`
		V        json.RawMessage      `json:"v"`
		ID       string               `json:"id"`
		Type     string               `json:"type"`
		Class    string               `json:"class"`
		Name     string               `json:"name"`
		Message  *string              `json:"message"`
		Items    []*Desc              `json:"items"`
		Entries  [][2]*Desc           `json:"entries"`
		Fields   [][2]json.RawMessage `json:"fields"`
		Variable bool                 `json:"variable"`
		Cause    *Desc                `json:"cause"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*d = Desc{T: raw.T, ID: raw.ID, Variable: raw.Variable}
	var err error
	switch raw.T {
	case "null", "ref":
	case "bool":
		err = json.Unmarshal(raw.V, &d.Bool)
	case "int":
		err = json.Unmarshal(raw.V, &d.Int)
	case "long":
		var s string
		if err = json.Unmarshal(raw.V, &s); err == nil {
			d.Long, err = strconv.ParseInt(s, 10, 64)
		}
	case "double":
		d.Double, err = parseDoubleJSON(raw.V)
	case "date":
		err = json.Unmarshal(raw.V, &d.Date)
	case "string", "bigdecimal":
		err = json.Unmarshal(raw.V, &d.Str)
	case "binary":
		var s string
		if err = json.Unmarshal(raw.V, &s); err == nil {
			d.Bin, err = base64.StdEncoding.DecodeString(s)
		}
	case "list":
		d.Type, d.Items = raw.Type, raw.Items
	case "map":
		d.Type = raw.Type
		for _, e := range raw.Entries {
			d.Entries = append(d.Entries, Pair{e[0], e[1]})
		}
	case "object":
		d.Type = raw.Class
		for _, f := range raw.Fields {
			var nd NamedDesc
			if err = json.Unmarshal(f[0], &nd.Name); err != nil {
				break
			}
			if err = json.Unmarshal(f[1], &nd.Value); err != nil {
				break
			}
			d.Fields = append(d.Fields, nd)
		}
	case "enum":
		d.Type, d.Str = raw.Class, raw.Name
	case "exception":
		d.Type, d.Cause = raw.Class, raw.Cause
		if raw.Message != nil {
			d.Str = *raw.Message
		}
	default:
		return fmt.Errorf("reading a description: unknown type %q", raw.T)
	}
	if err != nil {
		return fmt.Errorf("reading a %s description: %w", raw.T, err)
	}
	return nil
}

func parseDoubleJSON(v json.RawMessage) (float64, error) {
	var s string
	if json.Unmarshal(v, &s) == nil {
		switch s {
		case "NaN":
			return math.Float64frombits(canonicalNaN), nil
		case "Infinity":
			return math.Inf(1), nil
		case "-Infinity":
			return math.Inf(-1), nil
		}
		return 0, fmt.Errorf("unknown double %q", s)
	}
	var f float64
	err := json.Unmarshal(v, &f)
	return f, err
}

// canonicalNaN is the NaN Java's Double.doubleToLongBits and JavaScript
// write; Go's math.NaN() has another payload.
const canonicalNaN = 0x7ff8000000000000
