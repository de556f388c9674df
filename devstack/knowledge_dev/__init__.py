"""The local stack: moto's server on 127.0.0.1 standing in for AWS, fed by the real handlers."""
