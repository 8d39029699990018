// Package drivertest is a fake clinfer device for tests: a pure-Go plugin
// that runs Parameter -> Relu -> Result graphs (Relu and Identity on f32),
// built on plugin's property machinery. Tests of the Core, of HETERO and of
// the tests/devicetest conformance suite use it in place of a real device;
// its Faults switch on deliberate misbehaviour so a suite can show that it
// catches them.
package drivertest
