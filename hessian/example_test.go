package hessian_test

import (
	"encoding/json"
	"fmt"

	"github.com/dubbogw/dubbogw/hessian"
)

// Encode a Java object (a POJO) and decode it again.
func Example() {
	user := &hessian.Object{
		Class: "com.example.User",
		Fields: []hessian.Field{
			{Name: "id", Value: int64(42)},
			{Name: "name", Value: "Ann"},
			{Name: "balance", Value: hessian.BigDecimal{Value: "12.50"}},
		},
	}
	enc := hessian.NewEncoder(nil)
	if err := enc.Encode(user); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("% x\n", enc.Bytes()[:24])

	v, err := hessian.NewDecoder(enc.Bytes()).Decode()
	if err != nil {
		fmt.Println(err)
		return
	}
	back := v.(*hessian.Object)
	name, _ := back.Get("name")
	balance, _ := back.Get("balance")
	fmt.Println(back.Class, name, balance.(hessian.BigDecimal).Value)
	// Output:
	// 43 10 63 6f 6d 2e 65 78 61 6d 70 6c 65 2e 55 73 65 72 93 02 69 64 04 6e
	// com.example.User Ann 12.50
}

// Plain turns decoded values into what encoding/json marshals.
func ExamplePlain() {
	order := &hessian.Object{
		Class: "com.example.Order",
		Fields: []hessian.Field{
			{Name: "id", Value: int64(7)},
			{Name: "status", Value: &hessian.Object{Class: "com.example.Status", Fields: []hessian.Field{{Name: "name", Value: "PAID"}}}},
			{Name: "total", Value: hessian.BigDecimal{Value: "99.90"}},
			{Name: "day", Value: hessian.LocalDate{Year: 2024, Month: 3, Day: 1}},
			{Name: "lines", Value: &hessian.List{Type: "java.util.ArrayList", Items: []any{"apple", "pear"}}},
		},
	}
	out, _ := json.Marshal(hessian.Plain(order))
	fmt.Println(string(out))
	out, _ = json.Marshal(hessian.PlainOptions{KeepClass: true, EnumNames: true}.Plain(order))
	fmt.Println(string(out))
	// Output:
	// {"day":"2024-03-01","id":7,"lines":["apple","pear"],"status":{"name":"PAID"},"total":99.90}
	// {"class":"com.example.Order","day":"2024-03-01","id":7,"lines":["apple","pear"],"status":"PAID","total":99.90}
}

// AsException reads a Java exception a Dubbo provider threw.
func ExampleAsException() {
	// What a provider sends for new BizException("out of stock",
	// new SQLException("timeout")): Throwable's fields, the cause nested.
	enc := hessian.NewEncoder(nil)
	_ = enc.Encode(&hessian.Exception{
		Class:   "com.example.BizException",
		Message: "out of stock",
		Cause:   &hessian.Exception{Class: "java.sql.SQLException", Message: "timeout"},
		StackTrace: []hessian.StackFrame{
			{DeclaringClass: "com.example.StockService", MethodName: "take", FileName: "StockService.java", LineNumber: 42},
		},
	})
	v, _ := hessian.NewDecoder(enc.Bytes()).Decode() // an *Object, as any Throwable decodes

	exc, ok := hessian.AsException(v)
	fmt.Println(ok)
	fmt.Println(exc)
	fmt.Println(exc.StackTrace[0].MethodName, exc.StackTrace[0].LineNumber)
	// Output:
	// true
	// com.example.BizException: out of stock (caused by java.sql.SQLException: timeout)
	// take 42
}

// The low-level writers let a transcoder write Hessian without building
// values first, here a map of two entries and a typed list.
func ExampleEncoder_WriteMapStart() {
	enc := hessian.NewEncoder(nil)
	enc.WriteMapStart("")
	enc.WriteString("ids")
	enc.WriteListStart("[long", 2)
	enc.WriteLong(1)
	enc.WriteLong(2)
	enc.WriteString("ok")
	enc.WriteBool(true)
	enc.WriteMapEnd()
	fmt.Printf("% x\n", enc.Bytes())

	v, _ := hessian.NewDecoder(enc.Bytes()).Decode()
	ids, _ := v.(*hessian.Map).Get("ids")
	fmt.Println(ids.(*hessian.List).Type, ids.(*hessian.List).Items)
	// Output:
	// 48 03 69 64 73 72 05 5b 6c 6f 6e 67 e1 e2 02 6f 6b 54 5a
	// [long [1 2]
}
