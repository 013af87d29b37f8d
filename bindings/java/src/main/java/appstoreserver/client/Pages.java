package appstoreserver.client;

import java.util.Iterator;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;

/**
 * Every page of a paginated endpoint (beyond Apple): an Iterable whose each iteration makes the calls anew, the
 * first when the iteration starts and each following one when the iteration reaches its page (the native core's
 * driver follows revision / paginationToken while hasMore, in the environment that answered the first page).
 * Iterating throws UncheckedAPIException (the APIException as its cause), java.io.UncheckedIOException (the request
 * got no answer) and the client's other exceptions. An iteration left before its end frees its call when it is
 * collected; stream() closes it when the stream is closed.
 *
 * @param <T> the page model (or Answered of it, from client.withEnvironment())
 */
public final class Pages<T> implements Iterable<T> {
    /** An iterator that may hold a native call until it ends. */
    interface PageIterator<T> extends Iterator<T>, AutoCloseable {
        @Override
        void close();
    }

    private final Supplier<PageIterator<T>> start;

    Pages(Supplier<PageIterator<T>> start) {
        this.start = start;
    }

    static <T> Pages<T> values(Pages<Answered<T>> answers) {
        return answers.map(Answered::getValue);
    }

    private <U> Pages<U> map(Function<T, U> f) {
        return new Pages<>(() -> {
            PageIterator<T> it = start.get();
            return new PageIterator<U>() {
                @Override
                public boolean hasNext() {
                    return it.hasNext();
                }

                @Override
                public U next() {
                    return f.apply(it.next());
                }

                @Override
                public void close() {
                    it.close();
                }
            };
        });
    }

    @Override
    public Iterator<T> iterator() {
        return start.get();
    }

    /** The pages as a sequential Stream; closing the stream (try-with-resources) frees a call left before its end. */
    public Stream<T> stream() {
        PageIterator<T> it = start.get();
        return StreamSupport.stream(Spliterators.spliteratorUnknownSize(it, Spliterator.ORDERED | Spliterator.NONNULL),
                false).onClose(it::close);
    }
}
