<?php

declare(strict_types=1);

namespace AppStoreServer\Http;

/**
 * A PSR-18 client (Guzzle, Symfony HttpClient's Psr18Client, ...) as the transport, without a dependency on the PSR
 * packages: $client has sendRequest(RequestInterface), $requests createRequest($method, $uri) (PSR-17
 * RequestFactoryInterface), $streams createStream($body) (PSR-17 StreamFactoryInterface). The client must not follow
 * redirects and must enforce its own timeout (configure it so; PSR-18 has no per-request timeout); the body limit
 * is enforced here while the body is read.
 */
final class Psr18Transport implements HttpTransport
{
    public function __construct(private readonly object $client, private readonly object $requests, private readonly object $streams)
    {
        foreach ([[$client, 'sendRequest'], [$requests, 'createRequest'], [$streams, 'createStream']] as [$o, $m]) {
            if (!method_exists($o, $m)) {
                throw new \InvalidArgumentException(get_debug_type($o) . " has no $m() method");
            }
        }
    }

    public function send(string $method, string $url, array $headers, string $body, int $timeoutMs, int $bodyLimit): HttpResponse
    {
        $request = $this->requests->createRequest($method, $url);
        foreach ($headers as [$name, $value]) {
            $request = $request->withHeader($name, $value);
        }
        if ($body !== '') {
            $request = $request->withBody($this->streams->createStream($body));
        }
        try {
            $response = $this->client->sendRequest($request);
        } catch (\Throwable $e) {
            // PSR-18: a NetworkExceptionInterface is "no answer"; anything else failed the exchange.
            $network = false;
            foreach (class_implements($e) ?: [] as $iface) {
                $network = $network || str_ends_with($iface, 'NetworkExceptionInterface');
            }
            throw new TransportException($network ? TransportFailure::UNREACHABLE : TransportFailure::FAILED, $e->getMessage(), $e);
        }
        $stream = $response->getBody();
        $data = '';
        while (!$stream->eof()) {
            $data .= $stream->read(65536);
            if (strlen($data) > $bodyLimit) {
                throw new TransportException(TransportFailure::FAILED, "the response body exceeds $bodyLimit bytes");
            }
        }
        $out = [];
        foreach ($response->getHeaders() as $name => $values) {
            foreach ($values as $v) {
                $out[] = [(string) $name, (string) $v];
            }
        }
        return new HttpResponse($response->getStatusCode(), $out, $data);
    }
}
