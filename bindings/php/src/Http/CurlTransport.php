<?php

declare(strict_types=1);

namespace AppStoreServer\Http;

/** HTTP over ext-curl: no redirects, one deadline for the exchange, the body limit enforced while reading. */
final class CurlTransport implements HttpTransport
{
    public function send(string $method, string $url, array $headers, string $body, int $timeoutMs, int $bodyLimit): HttpResponse
    {
        if (!preg_match('#^https?://#i', $url)) {
            throw new TransportException(TransportFailure::FAILED, "not an http(s) URL: $url");
        }
        $h = curl_init();
        $received = [];
        $data = '';
        $over = false;
        $lines = [];
        $typed = false;
        foreach ($headers as [$name, $value]) {
            $lines[] = "$name: $value";
            $typed = $typed || strcasecmp($name, 'Content-Type') === 0;
        }
        $lines[] = 'Expect:'; // no 100-continue round trip
        if (!$typed) {
            $lines[] = 'Content-Type:'; // curl would add a form type to a body-less POST
        }
        curl_setopt_array($h, [
            CURLOPT_URL => $url,
            CURLOPT_CUSTOMREQUEST => $method,
            CURLOPT_HTTPHEADER => $lines,
            CURLOPT_FOLLOWLOCATION => false,
            CURLOPT_TIMEOUT_MS => max(1, $timeoutMs),
            CURLOPT_CONNECTTIMEOUT_MS => max(1, $timeoutMs),
            CURLOPT_NOSIGNAL => true,
            CURLOPT_PROTOCOLS => CURLPROTO_HTTP | CURLPROTO_HTTPS,
            CURLOPT_HEADERFUNCTION => static function ($ch, string $line) use (&$received): int {
                $t = rtrim($line, "\r\n");
                if (preg_match('#^HTTP/\S+\s+\d#', $t)) {
                    $received = []; // a new answer (after a 1xx): its headers only
                } elseif ($t !== '' && str_contains($t, ':')) {
                    [$n, $v] = explode(':', $t, 2);
                    $received[] = [trim($n), trim($v)];
                }
                return strlen($line);
            },
            CURLOPT_WRITEFUNCTION => static function ($ch, string $chunk) use (&$data, &$over, $bodyLimit): int {
                if (strlen($data) + strlen($chunk) > $bodyLimit) {
                    $over = true;
                    return 0; // stop reading: curl fails the transfer
                }
                $data .= $chunk;
                return strlen($chunk);
            },
        ]);
        if ($body !== '' || in_array($method, ['POST', 'PUT', 'PATCH'], true)) {
            curl_setopt($h, CURLOPT_POSTFIELDS, $body);
        }
        $ok = curl_exec($h);
        $errno = curl_errno($h);
        $error = curl_error($h);
        $status = (int) curl_getinfo($h, CURLINFO_RESPONSE_CODE);
        curl_close($h);
        if ($over) {
            throw new TransportException(TransportFailure::FAILED, "the response body exceeds $bodyLimit bytes");
        }
        if ($ok === false || $errno !== 0) {
            $failure = match ($errno) {
                CURLE_OPERATION_TIMEDOUT => TransportFailure::TIMEOUT,
                CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY => TransportFailure::UNREACHABLE,
                default => TransportFailure::FAILED,
            };
            throw new TransportException($failure, "curl error $errno: $error");
        }
        return new HttpResponse($status, $received, $data);
    }
}
