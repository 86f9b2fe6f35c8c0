package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dubbogw/dubbogw/dubbo/protocol"
	"github.com/dubbogw/dubbogw/hessian"
)

// Java exception classes the server answers with.
const (
	classNoSuchMethod    = "java.lang.NoSuchMethodException"
	classIllegalArgument = "java.lang.IllegalArgumentException"
	classIllegalState    = "java.lang.IllegalStateException"
	classRuntime         = "java.lang.RuntimeException"
	classRpc             = "org.apache.dubbo.rpc.RpcException"
)

// Exception returns an error that a Method's Func returns to make the call
// answer with a Java exception of that class and message.
func Exception(class, message string) error {
	return &hessian.Exception{Class: class, Message: message}
}

type attachmentsKey struct{}

// Attachments returns the attachments of the request a Method's Func is
// serving (nil outside a call).
func Attachments(ctx context.Context) map[string]any {
	m, _ := ctx.Value(attachmentsKey{}).(map[string]any)
	return m
}

type serviceKey struct{ iface, version, group string }

// String is Java's service key: group/interface:version.
func (k serviceKey) String() string { return protocol.ServiceKey(k.group, k.iface, k.version) }

type service struct {
	key     serviceKey
	methods map[string][]*method
}

type method struct {
	name       string
	paramTypes []string
	descriptor string
	fn         func(ctx context.Context, args []any) (any, error)
}

// signature is "name(type, type)" for messages.
func (m *method) signature() string {
	return m.name + "(" + strings.Join(m.paramTypes, ", ") + ")"
}

func compileService(svc Service) (*service, error) {
	if svc.Interface == "" {
		return nil, errors.New("no interface name")
	}
	out := &service{
		key:     serviceKey{iface: svc.Interface, version: normalizeVersion(svc.Version), group: svc.Group},
		methods: make(map[string][]*method, len(svc.Methods)),
	}
	for name, overloads := range svc.Methods {
		for _, m := range overloads {
			if m.Func == nil {
				return nil, fmt.Errorf("method %s has no Func", name)
			}
			desc, err := protocol.Descriptor(m.ParamTypes)
			if err != nil {
				return nil, fmt.Errorf("method %s: %w", name, err)
			}
			for _, other := range out.methods[name] {
				if other.descriptor == desc {
					return nil, fmt.Errorf("method %s(%s) is registered twice", name, strings.Join(m.ParamTypes, ", "))
				}
			}
			out.methods[name] = append(out.methods[name], &method{
				name: name, paramTypes: m.ParamTypes, descriptor: desc, fn: m.Func,
			})
		}
	}
	return out, nil
}

// normalizeVersion treats Java's "0.0.0" as no version.
func normalizeVersion(v string) string {
	if v == "0.0.0" {
		return ""
	}
	return v
}

func (s *Server) lookup(req *protocol.DecodedRequest) (*service, serviceKey) {
	key := serviceKey{iface: req.Path, version: req.Version, group: req.Group()}
	if key.iface == "" {
		key.iface, _ = req.Attachments[protocol.AttachmentInterface].(string)
	}
	if key.version == "" {
		key.version, _ = req.Attachments[protocol.AttachmentVersion].(string)
	}
	key.version = normalizeVersion(key.version)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.services[key], key
}

// invoke runs one call and returns its response (ID unset).
func (s *Server) invoke(ctx context.Context, req *protocol.DecodedRequest, c *conn) *protocol.Response {
	resp := &protocol.Response{Status: protocol.StatusOK}
	if protocol.SupportsResponseAttachments(req.DubboVersion) {
		resp.WithAttachments = true
		resp.Attachments = map[string]any{protocol.AttachmentDubbo: protocol.DefaultDubboVersion}
	}
	svc, key := s.lookup(req)
	if svc == nil {
		resp.Status = protocol.StatusServiceNotFound
		resp.ErrorMessage = s.notFoundMessage(key, req, c)
		return resp
	}
	ctx = context.WithValue(ctx, attachmentsKey{}, req.Attachments)
	if isGeneric(req) {
		m, args, x := svc.resolveGeneric(req.Args)
		if x != nil {
			resp.Exception = x
			return resp
		}
		v, err := call(ctx, m, args)
		if err != nil {
			resp.Exception = asException(err)
			return resp
		}
		resp.Value = generalize(v)
		return resp
	}
	m := svc.find(req.Method, req.ParamTypes)
	if m == nil {
		types, _ := protocol.ParseDescriptor(req.ParamTypes)
		resp.Exception = &hessian.Exception{Class: classNoSuchMethod,
			Message: "Not found method \"" + req.Method + "(" + strings.Join(types, ", ") + ")\" in service " + svc.key.String()}
		return resp
	}
	v, err := call(ctx, m, req.Args)
	if err != nil {
		resp.Exception = asException(err)
		return resp
	}
	resp.Value = v
	return resp
}

// notFoundMessage is Java's DubboProtocol.getInvoker message.
func (s *Server) notFoundMessage(key serviceKey, req *protocol.DecodedRequest, c *conn) string {
	_, port := hostPort(c.nc.LocalAddr())
	s.mu.Lock()
	exported := make([]string, 0, len(s.services))
	for k := range s.services {
		exported = append(exported, k.String()+":"+port)
	}
	s.mu.Unlock()
	return "Not found exported service: " + key.String() + ":" + port + " in [" + strings.Join(exported, ", ") +
		"], may be version or group mismatch , channel: consumer: /" + c.nc.RemoteAddr().String() +
		" --> provider: /" + c.nc.LocalAddr().String() +
		", message:RpcInvocation [methodName=" + req.Method + ", parameterTypesDesc=" + req.ParamTypes + "]"
}

func isGeneric(req *protocol.DecodedRequest) bool {
	return (req.Method == protocol.MethodInvoke || req.Method == protocol.MethodInvokeAsync) &&
		req.ParamTypes == protocol.GenericParamTypes
}

func (svc *service) find(name, descriptor string) *method {
	for _, m := range svc.methods[name] {
		if m.descriptor == descriptor {
			return m
		}
	}
	return nil
}

// resolveGeneric reads $invoke's (method, parameter types, arguments),
// finds the overload as Java's GenericFilter does, and realizes the
// arguments for it. The error is the exception to answer with.
func (svc *service) resolveGeneric(raw []any) (*method, []any, *hessian.Exception) {
	name, ok := raw[0].(string)
	if !ok {
		return nil, nil, &hessian.Exception{Class: classIllegalArgument, Message: "$invoke: the method name is not a string"}
	}
	types, typesGiven, err := stringList(raw[1])
	if err != nil {
		return nil, nil, &hessian.Exception{Class: classIllegalArgument, Message: "$invoke: parameter types: " + err.Error()}
	}
	args, err := itemList(raw[2])
	if err != nil {
		return nil, nil, &hessian.Exception{Class: classIllegalArgument, Message: "$invoke: arguments: " + err.Error()}
	}
	var m *method
	if typesGiven {
		if len(types) != len(args) {
			return nil, nil, &hessian.Exception{Class: classRpc, Message: "GenericFilter#invoke args.length != types.length, please check your params"}
		}
		desc, err := protocol.Descriptor(types)
		if err == nil {
			m = svc.find(name, desc)
		}
		if m == nil {
			return nil, nil, &hessian.Exception{Class: classNoSuchMethod,
				Message: "No such method " + name + "(" + strings.Join(types, ", ") + ") in service " + svc.key.String()}
		}
	} else { // null types: the method is found by name, as Java does
		var candidates []*method
		for _, c := range svc.methods[name] {
			if len(c.paramTypes) == len(args) {
				candidates = append(candidates, c)
			}
		}
		switch len(candidates) {
		case 0:
			return nil, nil, &hessian.Exception{Class: classNoSuchMethod, Message: "No such method " + name + " in service " + svc.key.String()}
		case 1:
			m = candidates[0]
		default:
			return nil, nil, &hessian.Exception{Class: classIllegalState,
				Message: "Not unique method for method name(" + name + ") in service " + svc.key.String() + ", please specify parameter types"}
		}
	}
	realized := make([]any, len(args))
	for i, a := range args {
		realized[i] = realize(a, m.paramTypes[i])
	}
	return m, realized, nil
}

func stringList(v any) (items []string, given bool, err error) {
	if v == nil {
		return nil, false, nil
	}
	l, ok := v.(*hessian.List)
	if !ok {
		return nil, false, fmt.Errorf("got %T, want a list of strings", v)
	}
	items = make([]string, len(l.Items))
	for i, it := range l.Items {
		if items[i], ok = it.(string); !ok {
			return nil, false, fmt.Errorf("item %d is %T, not a string", i, it)
		}
	}
	return items, true, nil
}

func itemList(v any) ([]any, error) {
	switch l := v.(type) {
	case nil:
		return nil, nil
	case *hessian.List:
		return l.Items, nil
	}
	return nil, fmt.Errorf("got %T, want a list", v)
}

// call runs m, turning a panic into a RuntimeException.
func call(ctx context.Context, m *method, args []any) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &hessian.Exception{Class: classRuntime, Message: fmt.Sprint("panic in ", m.signature(), ": ", r)}
		}
	}()
	return m.fn(ctx, args)
}

// asException turns a Func's error into the Throwable to answer with.
func asException(err error) *hessian.Exception {
	var x *hessian.Exception
	if errors.As(err, &x) {
		return x
	}
	return &hessian.Exception{Class: classRuntime, Message: err.Error()}
}
