package jsonbridge

import "strings"

// deniedClasses are Java classes, and packages (entries ending in "."),
// known as deserialization gadgets: instantiating them, or setting their
// properties, runs code or reaches out to the network (JNDI, RMI, scripts,
// templates, connection pools). A client can never name one, whatever the
// configuration says: not in a "class" key, not as a parameter type, not
// inside one. The list follows the gadget chains of ysoserial and
// marshalsec and the deny-lists of Dubbo, hessian-lite and fastjson.
var deniedClasses = []string{
	// JDK
	"java.lang.Runtime",
	"java.lang.ProcessBuilder",
	"java.lang.ProcessImpl",
	"java.lang.UNIXProcess",
	"java.lang.Thread",
	"java.lang.ThreadGroup",
	"java.lang.Class",
	"java.lang.ClassLoader",
	"java.lang.System",
	"java.lang.reflect.",
	"java.lang.invoke.",
	"java.beans.",
	"java.net.URLClassLoader",
	"java.net.URL",
	"java.net.Socket",
	"java.net.InetAddress",
	"java.rmi.",
	"java.security.SignedObject",
	"java.util.ServiceLoader",
	"java.util.logging.",
	"java.io.File",
	"java.io.FileInputStream",
	"java.io.FileOutputStream",
	"java.io.ObjectInputStream",
	"java.nio.file.",
	"javax.naming.",
	"javax.script.",
	"javax.management.",
	"javax.sql.",
	"javax.swing.",
	"javax.imageio.",
	"javax.activation.",
	"javax.xml.transform.",
	"jdk.",
	"sun.",
	"com.sun.",
	// Libraries with known chains
	"bsh.",
	"groovy.",
	"org.codehaus.groovy.",
	"org.apache.commons.collections.functors.",
	"org.apache.commons.collections4.functors.",
	"org.apache.commons.collections.Transformer",
	"org.apache.commons.collections.map.LazyMap",
	"org.apache.commons.beanutils.",
	"org.apache.commons.configuration.",
	"org.apache.commons.configuration2.",
	"org.apache.commons.dbcp.",
	"org.apache.commons.dbcp2.",
	"org.apache.commons.fileupload.",
	"org.apache.commons.io.",
	"org.apache.commons.jelly.",
	"org.apache.commons.proxy.",
	"org.apache.xbean.",
	"org.apache.xalan.",
	"org.apache.xpath.",
	"org.apache.bcel.",
	"org.apache.tomcat.dbcp.",
	"org.apache.tomcat.jdbc.",
	"org.apache.ibatis.",
	"org.apache.ignite.",
	"org.apache.log4j.",
	"org.apache.logging.log4j.",
	"org.apache.myfaces.",
	"org.apache.openjpa.",
	"org.apache.shiro.",
	"org.apache.wicket.",
	"org.apache.aries.",
	"org.apache.cocoon.",
	"org.apache.carbondata.",
	"org.apache.batik.",
	"org.apache.catalina.",
	"org.apache.axis2.",
	"org.apache.hadoop.",
	"org.apache.hive.",
	"org.apache.activemq.",
	"org.apache.cxf.",
	"org.apache.velocity.",
	"org.apache.zookeeper.",
	"org.apache.dubbo.common.utils.",
	"org.apache.dubbo.rpc.",
	"com.alibaba.dubbo.rpc.",
	"org.springframework.",
	"org.hibernate.",
	"org.jboss.",
	"org.mozilla.javascript.",
	"org.python.",
	"org.aspectj.",
	"org.eclipse.jetty.",
	"org.slf4j.",
	"org.quartz.",
	"org.yaml.snakeyaml.",
	"org.jdom.",
	"org.jdom2.",
	"org.osjava.",
	"org.h2.",
	"org.hsqldb.",
	"org.postgresql.",
	"org.mariadb.",
	"oracle.jdbc.",
	"com.mysql.",
	"com.mchange.",
	"com.zaxxer.hikari.",
	"com.alibaba.druid.",
	"com.alibaba.fastjson.",
	"com.alibaba.com.caucho.",
	"com.caucho.",
	"com.fasterxml.jackson.",
	"com.google.inject.",
	"com.ibatis.",
	"com.ibm.",
	"com.rometools.",
	"com.rometools.rome.",
	"com.sun.rowset.",
	"com.thoughtworks.xstream.",
	"com.esotericsoftware.",
	"net.sf.json.",
	"net.sf.ehcache.",
	"ch.qos.logback.",
	"clojure.",
	"freemarker.",
	"javassist.",
	"ognl.",
	"org.mvel2.",
	"org.thymeleaf.",
	"org.jruby.",
	"org.openqa.selenium.",
	"org.geotools.",
	"org.datanucleus.",
	"org.objectweb.asm.",
	"weblogic.",
	"oracle.",
	"flex.messaging.",
	"br.com.anteros.",
	"com.atomikos.",
	"com.newrelic.",
	"com.p6spy.",
	"org.arrah.",
	"org.docx4j.",
	"org.jsecurity.",
	"org.marshalsec.",
	"ysoserial.",
	"marshalsec.",
	"net.bytebuddy.",
	"net.sf.cglib.",
	"org.apache.commons.lang3.reflect.",
	"com.opensymphony.xwork2.",
	"org.apache.struts2.",
}

// DeniedClass reports whether name is, or lies in a package of, a known
// deserialization gadget that a client may never name (see deniedClasses).
// Array descriptors and source forms are looked at by their component
// class.
func DeniedClass(name string) bool {
	name = strings.TrimSpace(name)
	name = strings.TrimLeft(name, "[")
	if strings.HasPrefix(name, "L") && strings.HasSuffix(name, ";") {
		name = name[1 : len(name)-1]
	}
	if i := strings.IndexAny(name, "<["); i >= 0 {
		name = name[:i]
	}
	for _, d := range deniedClasses {
		if strings.HasSuffix(d, ".") {
			if strings.HasPrefix(name, d) {
				return true
			}
		} else if name == d || strings.HasPrefix(name, d+"$") {
			return true
		}
	}
	return false
}

// classList matches class names against exact names and package prefixes
// ("com.example.*" matches com.example.User and com.example.sub.Item).
type classList struct {
	exact    map[string]struct{}
	prefixes []string
}

func newClassList(patterns []string) classList {
	l := classList{exact: make(map[string]struct{}, len(patterns))}
	for _, p := range patterns {
		if pre, ok := strings.CutSuffix(p, "*"); ok {
			l.prefixes = append(l.prefixes, pre)
		} else {
			l.exact[p] = struct{}{}
		}
	}
	return l
}

func (l *classList) match(name string) bool {
	if _, ok := l.exact[name]; ok {
		return true
	}
	for _, p := range l.prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// safeClasses are value classes beyond the built-in types that
// RestrictClasses lets a client name without configuration: java.time,
// more java.util collections and values, java.sql's date types. None
// runs code when instantiated or filled with data.
var safeClasses = newClassList([]string{
	"java.time.*",
	"java.util.Vector", "java.util.Stack", "java.util.ArrayDeque", "java.util.IdentityHashMap",
	"java.util.Locale", "java.util.UUID", "java.util.Currency", "java.util.BitSet",
	"java.util.concurrent.CopyOnWriteArrayList", "java.util.concurrent.CopyOnWriteArraySet",
	"java.util.concurrent.ConcurrentSkipListMap", "java.util.concurrent.ConcurrentSkipListSet",
	"java.util.concurrent.ConcurrentLinkedQueue", "java.util.concurrent.ConcurrentLinkedDeque",
	"java.util.concurrent.atomic.AtomicInteger", "java.util.concurrent.atomic.AtomicLong", "java.util.concurrent.atomic.AtomicBoolean",
	"java.sql.Date", "java.sql.Time", "java.sql.Timestamp",
})

// classAllowed reports whether a client may name class name (in a "class"
// key or a parameter type): never a denied class; with RestrictClasses,
// only a built-in type, a safe value class (safeClasses), a class of the
// Schema or Enums, or one of AllowClasses.
func (enc *Encoder) classAllowed(name string) bool {
	if DeniedClass(name) {
		return false
	}
	if !enc.restrict {
		return true
	}
	if _, ok := builtins[name]; ok || safeClasses.match(name) {
		return true
	}
	if _, ok := enc.classes[name]; ok {
		return true
	}
	if _, ok := enc.enums[name]; ok {
		return true
	}
	return enc.allowed.match(name)
}

// classRefusal says why a client may not name class name; what is where
// it did ("the \"class\" key", "the type").
func classRefusal(what, name string) string {
	if DeniedClass(name) {
		return what + " names " + clip(name) + ", a known deserialization gadget: never allowed"
	}
	return what + " names " + clip(name) + ": only the declared class, a class of the schema or an allowed class may be named"
}
