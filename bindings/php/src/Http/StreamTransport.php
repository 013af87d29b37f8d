<?php

declare(strict_types=1);

namespace AppStoreServer\Http;

/** HTTP over PHP's streams (no extension needed): no redirects, a deadline, the body limit while reading. */
final class StreamTransport implements HttpTransport
{
    public function send(string $method, string $url, array $headers, string $body, int $timeoutMs, int $bodyLimit): HttpResponse
    {
        if (!preg_match('#^https?://#i', $url)) {
            throw new TransportException(TransportFailure::FAILED, "not an http(s) URL: $url");
        }
        $deadline = hrtime(true) + $timeoutMs * 1_000_000;
        $lines = '';
        foreach ($headers as [$name, $value]) {
            $lines .= "$name: $value\r\n";
        }
        $ctx = stream_context_create(['http' => [
            'method' => $method,
            'header' => $lines . "Connection: close\r\n",
            'content' => $body,
            'follow_location' => 0,
            'max_redirects' => 1,
            'ignore_errors' => true,
            'timeout' => max(0.001, $timeoutMs / 1000),
            'protocol_version' => 1.1,
        ]]);
        $error = null;
        set_error_handler(static function (int $no, string $msg) use (&$error): bool {
            $error = $msg;
            return true;
        });
        try {
            $fp = fopen($url, 'rb', false, $ctx);
        } finally {
            restore_error_handler();
        }
        if ($fp === false) {
            $timedOut = hrtime(true) >= $deadline || ($error !== null && stripos($error, 'timed out') !== false);
            throw new TransportException($timedOut ? TransportFailure::TIMEOUT : TransportFailure::UNREACHABLE,
                $error ?? "cannot open $url");
        }
        try {
            $meta = stream_get_meta_data($fp);
            $data = '';
            while (!feof($fp)) {
                $left = ($deadline - hrtime(true)) / 1e9;
                if ($left <= 0) {
                    throw new TransportException(TransportFailure::TIMEOUT, "timed out after $timeoutMs ms");
                }
                stream_set_timeout($fp, (int) $left, (int) (fmod($left, 1.0) * 1e6));
                $chunk = @fread($fp, 65536);
                if (stream_get_meta_data($fp)['timed_out'] || hrtime(true) >= $deadline) {
                    throw new TransportException(TransportFailure::TIMEOUT, "timed out after $timeoutMs ms");
                }
                if ($chunk === false) {
                    throw new TransportException(TransportFailure::FAILED, 'read failed');
                }
                $data .= $chunk;
                if (strlen($data) > $bodyLimit) {
                    throw new TransportException(TransportFailure::FAILED, "the response body exceeds $bodyLimit bytes");
                }
            }
        } finally {
            fclose($fp);
        }
        $status = 0;
        $received = [];
        foreach ($meta['wrapper_data'] ?? [] as $line) {
            if (preg_match('#^HTTP/\S+\s+(\d{3})#', $line, $m)) {
                $status = (int) $m[1];
                $received = [];
            } elseif (str_contains($line, ':')) {
                [$n, $v] = explode(':', $line, 2);
                $received[] = [trim($n), trim($v)];
            }
        }
        if ($status === 0) {
            throw new TransportException(TransportFailure::FAILED, 'no HTTP status line');
        }
        return new HttpResponse($status, $received, $data);
    }
}
