package hessian

import (
	"slices"
	"strings"
)

// Exception is a java.lang.Throwable as hessian-lite serializes it: an
// object of the exception's class with the fields detailMessage, cause,
// stackTrace and suppressedExceptions.
type Exception struct {
	Class      string
	Message    string
	Cause      *Exception
	StackTrace []StackFrame
	Suppressed []*Exception
}

// StackFrame is a java.lang.StackTraceElement.
type StackFrame struct {
	DeclaringClass string
	MethodName     string
	FileName       string
	LineNumber     int32
}

// Error returns "class: message" followed by the chain of causes, for
// example "com.example.BizException: no stock (caused by
// java.sql.SQLException: timeout)". A cause seen before ends the chain.
func (e *Exception) Error() string {
	var b strings.Builder
	var seen []*Exception
	for x := e; x != nil && !slices.Contains(seen, x); x = x.Cause {
		if len(seen) > 0 {
			b.WriteString(" (caused by ")
		}
		seen = append(seen, x)
		b.WriteString(x.Class)
		if x.Message != "" {
			if x.Class != "" {
				b.WriteString(": ")
			}
			b.WriteString(x.Message)
		}
	}
	for range len(seen) - 1 {
		b.WriteByte(')')
	}
	return b.String()
}

// Unwrap returns the cause, so errors.As and errors.Is walk the chain.
// Chains built by AsException never loop.
func (e *Exception) Unwrap() error {
	if e.Cause == nil {
		return nil
	}
	return e.Cause
}

// AsException converts a decoded Throwable — an *Object with a
// detailMessage field — into an Exception. A cause that is the exception
// itself (Java's marker for "no cause") or that would close a loop is
// dropped.
func AsException(v any) (*Exception, bool) {
	o, ok := v.(*Object)
	if !ok || !isThrowable(o) {
		return nil, false
	}
	c := exceptionConverter{seen: make(map[*Object]*Exception)}
	return c.convert(o), true
}

func isThrowable(o *Object) bool {
	_, ok := o.Get("detailMessage")
	return ok
}

type exceptionConverter struct {
	// seen maps each object converted, or being converted (nil), to its
	// Exception, so shared exceptions stay shared and loops are cut.
	seen map[*Object]*Exception
}

func (c *exceptionConverter) convert(o *Object) *Exception {
	if x, ok := c.seen[o]; ok {
		return x // nil while o is still being converted: a loop
	}
	c.seen[o] = nil
	x := &Exception{Class: o.Class}
	for _, f := range o.Fields {
		switch f.Name {
		case "detailMessage":
			x.Message, _ = f.Value.(string)
		case "cause":
			if co, ok := f.Value.(*Object); ok && co != o && isThrowable(co) {
				x.Cause = c.convert(co)
			}
		case "stackTrace":
			if l, ok := f.Value.(*List); ok {
				x.StackTrace = make([]StackFrame, 0, len(l.Items))
				for _, it := range l.Items {
					if fo, ok := it.(*Object); ok {
						x.StackTrace = append(x.StackTrace, stackFrameFrom(fo))
					}
				}
			}
		case "suppressedExceptions":
			if l, ok := f.Value.(*List); ok {
				for _, it := range l.Items {
					if so, ok := it.(*Object); ok && isThrowable(so) {
						if s := c.convert(so); s != nil {
							x.Suppressed = append(x.Suppressed, s)
						}
					}
				}
			}
		}
	}
	c.seen[o] = x
	return x
}

func stackFrameFrom(o *Object) StackFrame {
	var f StackFrame
	f.DeclaringClass, _ = fieldString(o, "declaringClass")
	f.MethodName, _ = fieldString(o, "methodName")
	f.FileName, _ = fieldString(o, "fileName")
	f.LineNumber, _ = fieldInt32(o, "lineNumber")
	return f
}

var (
	fieldsThrowable  = []string{"detailMessage", "cause", "stackTrace", "suppressedExceptions"}
	fieldsStackFrame = []string{"declaringClass", "methodName", "fileName", "lineNumber"}
)

const (
	classStackFrame      = "java.lang.StackTraceElement"
	typeStackFrameArray  = "[java.lang.StackTraceElement"
	defaultExceptionType = "java.lang.Exception"
)

// encodeException writes an Exception the way Java writes a Throwable: no
// cause is a reference to the exception itself, an empty message is null.
func (e *Encoder) encodeException(x *Exception) error {
	if ref, ok := e.excRefs.get(x); ok {
		e.writeRef(ref)
		return nil
	}
	self := e.refCount
	e.excRefs.put(x, self)
	if err := e.enter(); err != nil {
		return err
	}
	class := x.Class
	if class == "" {
		class = defaultExceptionType
	}
	e.objectStart(class, fieldsThrowable, false)
	if x.Message == "" {
		e.WriteNull()
	} else {
		e.WriteString(x.Message)
	}
	if x.Cause == nil {
		e.writeRef(self)
	} else if err := e.encodeException(x.Cause); err != nil {
		return err
	}
	e.WriteListStart(typeStackFrameArray, len(x.StackTrace))
	for _, f := range x.StackTrace {
		e.objectStart(classStackFrame, fieldsStackFrame, false)
		e.WriteString(f.DeclaringClass)
		e.WriteString(f.MethodName)
		if f.FileName == "" {
			e.WriteNull()
		} else {
			e.WriteString(f.FileName)
		}
		e.WriteInt(f.LineNumber)
	}
	e.WriteListStart("", len(x.Suppressed))
	for _, s := range x.Suppressed {
		if s == nil {
			e.WriteNull()
		} else if err := e.encodeException(s); err != nil {
			return err
		}
	}
	e.depth--
	return nil
}
