<?php

declare(strict_types=1);

namespace AppStoreServer\Internal;

/**
 * For the classes that own a library handle: a clone would share the handle and free it a second time, and a handle
 * cannot be serialized. Cloning and (un)serializing throw, and the destructor PHP still runs on a refused copy frees
 * nothing (only the object that made the handle owns it).
 *
 * @internal
 */
trait NotCloneable
{
    private int $ownerId = -1;

    /** Called by the constructor once the handle is made. */
    private function own(): void
    {
        $this->ownerId = spl_object_id($this);
    }

    /** Whether this object made its handle (false in a refused clone). */
    private function owns(): bool
    {
        return $this->ownerId === spl_object_id($this);
    }

    public function __clone()
    {
        throw new \LogicException(static::class . ' cannot be cloned (it owns a library handle); share the object instead');
    }

    public function __serialize(): array
    {
        throw new \LogicException(static::class . ' cannot be serialized (it owns a library handle)');
    }

    public function __unserialize(array $data): void
    {
        throw new \LogicException(static::class . ' cannot be unserialized (it owns a library handle)');
    }
}
