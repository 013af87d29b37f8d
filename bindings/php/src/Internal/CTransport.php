<?php

declare(strict_types=1);

namespace AppStoreServer\Internal;

use AppStoreServer\Http\DefaultTransport;
use AppStoreServer\Http\HttpTransport;
use AppStoreServer\Http\TransportException;
use AppStoreServer\Http\TransportFailure;
use FFI;
use FFI\CData;

/**
 * An appstore_transport whose callback is a PHP HttpTransport (online checks: the verifier's OCSP exchanges). The
 * callback catches everything: a PHP exception must never unwind through C.
 *
 * @internal
 */
final class CTransport
{
    use NotCloneable;

    public readonly CData $handle;
    private \Closure $callback; // kept alive as long as the handle
    private static ?self $default = null;

    /**
     * The bridge for $transport; null: the default transport's, made once per process and shared (PHP keeps an FFI
     * callback's trampoline until the request ends, so making one per verifier would grow a long-running worker).
     */
    public static function for(?HttpTransport $transport): self
    {
        return $transport === null ? (self::$default ??= new self(DefaultTransport::create())) : new self($transport);
    }

    private function __construct(HttpTransport $transport)
    {
        $f = Native::ffi();
        // A static closure holding only the transport: no cycle through $this, so the handle is freed with this object.
        $this->callback = static function ($userData, $method, $url, $headers, $headersLen, $body, $bodyLen, $timeoutMs, $response) use ($transport): int {
            try {
                return self::exchange($transport, $method, $url, $headers, (int) $headersLen, $body, (int) $bodyLen, (int) $timeoutMs, $response);
            } catch (\Throwable) {
                return AbiConstants::APPSTORE_TRANSPORT_RESULT_FAILED;
            }
        };
        $out = $f->new('appstore_transport *');
        $err = Native::errorSlot();
        $st = $f->appstore_transport_new($this->callback, null, FFI::addr($out), FFI::addr($err));
        if ($st !== 0) {
            throw new \RuntimeException(Native::takeError($err, $st)->message);
        }
        $this->handle = $out;
        $this->own();
    }

    private static function text(mixed $v, int $len = -1): string
    {
        if (is_string($v)) {
            return $len >= 0 ? substr($v, 0, $len) : $v;
        }
        if ($v instanceof CData && !FFI::isNull($v)) {
            return $len >= 0 ? FFI::string($v, $len) : FFI::string($v);
        }
        return '';
    }

    private static function exchange(HttpTransport $transport, mixed $method, mixed $url, mixed $headers, int $headersLen, mixed $body, int $bodyLen, int $timeoutMs, CData $response): int
    {
        $f = Native::ffi();
        $list = [];
        foreach (explode("\r\n", self::text($headers, $headersLen)) as $line) {
            if ($line !== '' && str_contains($line, ':')) {
                [$n, $v] = explode(':', $line, 2);
                $list[] = [trim($n), trim($v)];
            }
        }
        $limit = (int) $f->appstore_http_response_body_limit($response);
        try {
            $r = $transport->send(self::text($method), self::text($url), $list, $bodyLen > 0 ? self::text($body, $bodyLen) : '', $timeoutMs, $limit);
        } catch (TransportException $e) {
            return $e->failure->value;
        }
        if ($f->appstore_http_response_set_status($response, $r->status, null) !== 0) {
            return AbiConstants::APPSTORE_TRANSPORT_RESULT_FAILED;
        }
        foreach ($r->headers as [$n, $v]) {
            if (!str_contains($n . $v, "\0")) {
                $f->appstore_http_response_add_header($response, $n, $v, null);
            }
        }
        if ($r->body !== '' && $f->appstore_http_response_append_body($response, $r->body, strlen($r->body), null) !== 0) {
            return AbiConstants::APPSTORE_TRANSPORT_RESULT_FAILED;
        }
        return AbiConstants::APPSTORE_TRANSPORT_RESULT_OK;
    }

    public function __destruct()
    {
        if ($this->owns()) {
            Native::ffi()->appstore_transport_free($this->handle);
        }
    }
}
